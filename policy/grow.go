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

// walkPinned is the shared "skip pinned blocks" scan of queue-based
// policies: it visits l from the back, wrapping to the back after the front,
// and returns the first block for which take reports true. take may move
// the visited block to the front (a second chance); the scan then goes on
// from the block that was in front of it. It gives up (None) once it has
// seen Len consecutive pinned blocks, i.e. every member is pinned.
func walkPinned(l *List, start Block, pinned Pinned, take func(b Block) bool) Block {
	b := start
	if b == None {
		b = l.Back()
	}
	run := 0
	for b != None {
		prev := l.Prev(b)
		if pinned.Pinned(b) {
			run++
			if run >= l.Len() {
				return None
			}
		} else {
			run = 0
			if take(b) {
				return b
			}
		}
		if prev == None {
			prev = l.Back()
		}
		b = prev
	}
	return None
}
