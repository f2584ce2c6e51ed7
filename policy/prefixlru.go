package policy

// PrefixLRU models the LRU of radix-tree KV caches (SGLang's RadixAttention,
// vLLM's prefix caching), which evict a prefix's tail blocks before its
// head: only leaves are evictable, and a leaf's parent becomes one once the
// leaf is gone. A policy cannot see the tree, so it uses what the callers
// guarantee: within one request, Insert and Access calls arrive in prefix
// order with the same now. Blocks are ordered by (last touch time, then
// reverse call order): among blocks touched at the same time the deeper one
// (touched later) is evicted first, and across times it is plain LRU. For
// one request's blocks A, B, C touched at the same now the eviction order
// is C, B, A. A now that goes backwards counts as the latest now.
//
// The list keeps blocks of the latest now as one group at the front, with
// the group's deepest block at its back end; a block touched at that now is
// linked in right behind the group's back end.
type PrefixLRU struct {
	l     *List
	now   int64
	group Block // deepest block of the front group, None if the group is empty
	held  int   // resident blocks taken out by Acquire
}

// NewPrefixLRU returns an empty prefix LRU.
func NewPrefixLRU() *PrefixLRU { return &PrefixLRU{l: NewList(), group: None, now: -1 << 63} }

func (p *PrefixLRU) Len() int { return p.l.Len() + p.held }

func (p *PrefixLRU) touch(b Block, now int64) {
	if now > p.now {
		p.now, p.group = now, None
	}
	if p.group == None {
		p.l.PushFront(b)
	} else {
		p.l.InsertAfter(b, p.group)
	}
	p.group = b
}

func (p *PrefixLRU) Insert(b Block, _ int64, now int64) { p.touch(b, now) }

func (p *PrefixLRU) Access(b Block, now int64) {
	if !p.l.Contains(b) {
		return // held: refreshed at its release
	}
	p.unlink(b)
	p.touch(b, now)
}

// Acquire implements Holder.
func (p *PrefixLRU) Acquire(b Block) {
	if p.l.Contains(b) {
		p.unlink(b)
		p.held++
	}
}

// Release implements Holder: a request's blocks are released in prefix
// order with one now, so its deepest block goes first, as vLLM frees a
// finished request's blocks in reverse order.
func (p *PrefixLRU) Release(b Block, now int64) {
	if !p.l.Contains(b) {
		p.held--
		p.touch(b, now)
	}
}

func (p *PrefixLRU) Remove(b Block) {
	if p.l.Contains(b) {
		p.unlink(b)
	} else {
		p.held--
	}
}

// unlink takes b off the list; if b ended the front group, the block in
// front of it (still in the group, or None when the group is now empty)
// ends it.
func (p *PrefixLRU) unlink(b Block) {
	if b == p.group {
		p.group = p.l.Prev(b)
	}
	p.l.Remove(b)
}

func (p *PrefixLRU) Evict(_ int64, pinned Pinned) (Block, bool) {
	for b := p.l.Back(); b != None; b = p.l.Prev(b) {
		if !pinned.Pinned(b) {
			p.unlink(b)
			return b, true
		}
	}
	return None, false
}

func init() {
	Register(Spec{Name: "prefix-lru", Brief: "LRU that evicts a prefix's deeper blocks first (radix-tree KV caches)",
		New: func(Config) (Policy, error) { return NewPrefixLRU(), nil }})
}
