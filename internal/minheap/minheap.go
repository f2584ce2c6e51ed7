// Package minheap is a binary min-heap over a plain slice, ordered by a
// function: no interface boxing (container/heap's any allocates a value
// per push), so an event loop's pushes and pops allocate nothing once the
// slice has grown.
package minheap

// Push adds x to the heap h ordered by less.
func Push[T any](h *[]T, x T, less func(a, b *T) bool) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(&a[i], &a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

// Pop removes and returns the least element of the non-empty heap h.
func Pop[T any](h *[]T, less func(a, b *T) bool) T {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && less(&a[l], &a[m]) {
			m = l
		}
		if r := l + 1; r < n && less(&a[r], &a[m]) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
