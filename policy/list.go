package policy

// List is an intrusive doubly linked list of blocks. Links live in slices
// indexed by block, so membership tests and unlinking are O(1) and nothing
// is allocated once the slices cover the largest block seen. A block is in
// at most one List at a time per List value.
type List struct {
	prev, next []Block
	head, tail Block
	n          int
}

// NewList returns an empty list.
func NewList() *List { return &List{head: None, tail: None} }

func (l *List) grow(b Block) {
	if int(b) < len(l.next) {
		return
	}
	l.next = growTo(l.next, b, None-1) // None-1 marks "not a member"
	l.prev = growTo(l.prev, b, None-1)
}

// Contains reports whether b is on the list.
func (l *List) Contains(b Block) bool {
	return int(b) < len(l.next) && l.next[b] != None-1
}

// Len is the number of members.
func (l *List) Len() int { return l.n }

// Front is the most recently pushed block, or None.
func (l *List) Front() Block { return l.head }

// Back is the oldest block, or None.
func (l *List) Back() Block { return l.tail }

// Next returns the block after b toward the back, or None.
func (l *List) Next(b Block) Block { return l.next[b] }

// Prev returns the block before b toward the front, or None.
func (l *List) Prev(b Block) Block { return l.prev[b] }

// PushFront adds b (not a member) at the front.
func (l *List) PushFront(b Block) {
	l.grow(b)
	l.prev[b] = None
	l.next[b] = l.head
	if l.head != None {
		l.prev[l.head] = b
	} else {
		l.tail = b
	}
	l.head = b
	l.n++
}

// PushBack adds b (not a member) at the back.
func (l *List) PushBack(b Block) {
	l.grow(b)
	l.next[b] = None
	l.prev[b] = l.tail
	if l.tail != None {
		l.next[l.tail] = b
	} else {
		l.head = b
	}
	l.tail = b
	l.n++
}

// Remove unlinks member b.
func (l *List) Remove(b Block) {
	p, n := l.prev[b], l.next[b]
	if p != None {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n != None {
		l.prev[n] = p
	} else {
		l.tail = p
	}
	l.next[b], l.prev[b] = None-1, None-1
	l.n--
}

// MoveToFront moves member b to the front.
func (l *List) MoveToFront(b Block) {
	if l.head == b {
		return
	}
	l.Remove(b)
	l.PushFront(b)
}

// PopBack removes and returns the oldest block (None if empty).
func (l *List) PopBack() Block {
	b := l.tail
	if b != None {
		l.Remove(b)
	}
	return b
}

// InsertAfter adds b (not a member) right behind member mark, toward the back.
func (l *List) InsertAfter(b, mark Block) {
	l.grow(b)
	n := l.next[mark]
	l.prev[b], l.next[b] = mark, n
	l.next[mark] = b
	if n != None {
		l.prev[n] = b
	} else {
		l.tail = b
	}
	l.n++
}

// Reserve grows the links to cover blocks up to b, so that pushing them
// later allocates nothing. Policies with several lists reserve them all when
// a block is inserted, and so grow only when a new block id appears.
func (l *List) Reserve(b Block) { l.grow(b) }
