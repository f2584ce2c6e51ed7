package policy

// ensure returns s long enough to index b, new slots set to fill. The check
// is split from the growth so that it inlines into hot paths.
func ensure[T any](s []T, b Block, fill T) []T {
	if int(b) < len(s) {
		return s
	}
	return growTo(s, b, fill)
}

// growTo doubles (at least) in one exact allocation: appending slot by slot
// would copy the slice many times over and leave a trail of garbage.
func growTo[T any](s []T, b Block, fill T) []T {
	n := max(int(b)+1, 2*len(s), 64)
	t := make([]T, n)
	copy(t, s)
	for i := len(s); i < n; i++ {
		t[i] = fill
	}
	return t
}
