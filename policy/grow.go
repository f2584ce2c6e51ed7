package policy

// ensure returns s long enough to index b, new slots set to fill. The check
// is split from the growth so that it inlines into hot paths.
func ensure[T any](s []T, b Block, fill T) []T {
	if int(b) < len(s) {
		return s
	}
	return growTo(s, b, fill)
}

func growTo[T any](s []T, b Block, fill T) []T {
	n := max(int(b)+1, 2*len(s), 64)
	old := len(s)
	s = append(s, make([]T, n-old)...)
	for i := old; i < n; i++ {
		s[i] = fill
	}
	return s
}
