package core

import (
	"errors"
	"fmt"

	"kvsim/policy"
)

// Pool is a tier shared by the cores of a cluster: Mooncake Store's global
// DRAM pool, an NVMe-oF pool, remote DRAM. It is the last tier of every
// member core. Each node contributes the same share of capacity and a
// block lives on one node (its home): the writer's when its share has
// room (Mooncake's preferred segment, LMCache's local write), else the
// node with the most room; when none has room the pool's one policy
// evicts, across all nodes, until one does. A block is never replicated.
//
// The writer sees its copy at once (its body orders its own reads after
// the write); the other cores see it when the body reports that the write
// has landed (Publish), as a Mooncake Put is visible once it completes.
// An eviction removes the block from every core at once.
type Pool struct {
	nodes    int
	share    int64 // bytes each node contributes
	used     int64
	nodeUsed []int64
	peak     int64
	policy   policy.Policy
	home     []int16 // per block: the node holding it, -1 none
	size     []int64 // per block while resident
	members  []*Core // by node
	tier     int     // the pool's index in every member (set by the first)
	pins     poolPins
}

// NewPool builds a pool of nodes shares of share bytes each, ordered by p.
func NewPool(nodes int, share int64, p policy.Policy) (*Pool, error) {
	if nodes < 1 || nodes > 1<<15 || share <= 0 || share > MaxTime/int64(nodes) {
		return nil, fmt.Errorf("core: pool of %d nodes x %d bytes", nodes, share)
	}
	if p == nil {
		return nil, errors.New("core: pool needs a policy")
	}
	pl := &Pool{nodes: nodes, share: share, policy: p, nodeUsed: make([]int64, nodes), members: make([]*Core, nodes), tier: -1}
	pl.pins.p = pl
	return pl, nil
}

// Capacity is the pool's total: every node's share.
func (p *Pool) Capacity() int64 { return p.share * int64(p.nodes) }

// Used is the bytes resident in the pool.
func (p *Pool) Used() int64 { return p.used }

// Peak is the most bytes ever resident at once.
func (p *Pool) Peak() int64 { return p.peak }

// NodeUsed is the bytes resident on node n.
func (p *Pool) NodeUsed(n int) int64 { return p.nodeUsed[n] }

// Share is the capacity one node contributes.
func (p *Pool) Share() int64 { return p.share }

// Home is the node holding b, or -1.
func (p *Pool) Home(b Block) int {
	if int(b) >= len(p.home) {
		return -1
	}
	return int(p.home[b])
}

// Has reports whether the pool holds b (published or not).
func (p *Pool) Has(b Block) bool { return p.Home(b) >= 0 }

// Blocks is the number of blocks resident.
func (p *Pool) Blocks() int { return p.policy.Len() }

// join makes c the member on node n, the pool being c's tier t.
func (p *Pool) join(c *Core, n, t int) error {
	switch {
	case n < 0 || n >= p.nodes:
		return fmt.Errorf("core: node %d outside the pool's %d nodes", n, p.nodes)
	case p.members[n] != nil:
		return fmt.Errorf("core: node %d joined the pool twice", n)
	case p.tier >= 0 && p.tier != t:
		return fmt.Errorf("core: the pool is tier %d of one member, %d of another", p.tier, t)
	}
	p.members[n], p.tier = c, t
	return nil
}

// Publish makes b's pool copy visible to every member: the body calls it
// when the write of that copy has landed. A copy evicted meanwhile stays
// gone.
func (p *Pool) Publish(b Block) {
	if !p.Has(b) {
		return
	}
	for _, m := range p.members {
		if m == nil {
			continue
		}
		m.growBlocks(b)
		if m.size[b] == 0 {
			m.size[b] = p.size[b]
		}
		if m.where[b]&(1<<p.tier) == 0 {
			m.where[b] |= 1 << p.tier
			m.changed(b)
		}
	}
}

func (p *Pool) grow(b Block) {
	if int(b) < len(p.home) {
		return
	}
	n := max(int(b)+1, 2*len(p.home), 1024)
	p.home = grown(p.home, n, -1)
	p.size = grown(p.size, n, 0)
}

// fits is the node a block of need bytes written by node n would go to,
// or -1 when no node has room.
func (p *Pool) fits(n int, need int64) int {
	if p.nodeUsed[n]+need <= p.share {
		return n
	}
	best := -1
	for i, u := range p.nodeUsed {
		if u+need <= p.share && (best < 0 || u < p.nodeUsed[best]) {
			best = i
		}
	}
	return best
}

// room makes room for need bytes written by core c, evicting through c,
// and returns the node they go to (-1: no room can be made).
func (p *Pool) room(now int64, c *Core, need int64) int {
	if need > p.share {
		return -1
	}
	for {
		if h := p.fits(c.node, need); h >= 0 {
			return h
		}
		v, ok := p.policy.Evict(now, &p.pins)
		if !ok {
			return -1
		}
		c.evicted(now, p.tier, v)
		c.takeBatch(now, p.tier)
	}
}

// add makes b resident on node h, visible to writer c only.
func (p *Pool) add(now int64, c *Core, b Block, h int) {
	p.grow(b)
	if p.home[b] >= 0 {
		panic(fmt.Sprintf("core: block %d added to the pool twice", b))
	}
	sz := c.size[b]
	p.home[b], p.size[b] = int16(h), sz
	p.used += sz
	p.nodeUsed[h] += sz
	p.peak = max(p.peak, p.used)
	if p.nodeUsed[h] > p.share {
		panic(fmt.Sprintf("core: pool node %d over its share: %d > %d", h, p.nodeUsed[h], p.share))
	}
	p.policy.Insert(b, sz, now)
	c.where[b] |= 1 << p.tier
}

// drop forgets b (its policy already let go of it) in every member.
func (p *Pool) drop(b Block) {
	h := p.home[b]
	p.used -= p.size[b]
	p.nodeUsed[h] -= p.size[b]
	p.home[b], p.size[b] = -1, 0
	for _, m := range p.members {
		if m != nil && int(b) < len(m.where) && m.where[b]&(1<<p.tier) != 0 {
			m.where[b] &^= 1 << p.tier
			m.changed(b)
		}
	}
}

// poolPins is what the pool's policy sees as pinned: a block any member
// uses, prefetches or is admitting (shield).
type poolPins struct{ p *Pool }

func (pp *poolPins) Pinned(b Block) bool {
	for _, m := range pp.p.members {
		if m != nil && int(b) < len(m.pins) && (m.pins[b] > 0 || m.prefetchPins[b] > 0 || m.shield[b]) {
			return true
		}
	}
	return false
}

// Check verifies the pool's accounting: bytes per node and in all, within
// the shares, and the policy holding exactly the resident blocks.
func (p *Pool) Check() error {
	per := make([]int64, p.nodes)
	var all int64
	n := 0
	for b, h := range p.home {
		if h < 0 {
			continue
		}
		n++
		per[h] += p.size[b]
		all += p.size[b]
	}
	for b := range p.home {
		if p.home[b] >= 0 {
			continue
		}
		for i, m := range p.members {
			if m != nil && int(b) < len(m.where) && m.where[b]&(1<<p.tier) != 0 {
				return fmt.Errorf("member %d sees block %d in the pool, which does not hold it", i, b)
			}
		}
	}
	if all != p.used || all > p.Capacity() {
		return fmt.Errorf("pool: used %d, blocks add to %d, capacity %d", p.used, all, p.Capacity())
	}
	for i := range per {
		if per[i] != p.nodeUsed[i] || per[i] > p.share {
			return fmt.Errorf("pool node %d: used %d, blocks add to %d, share %d", i, p.nodeUsed[i], per[i], p.share)
		}
	}
	if p.policy.Len() != n {
		return fmt.Errorf("pool: policy holds %d blocks, pool %d", p.policy.Len(), n)
	}
	return nil
}
