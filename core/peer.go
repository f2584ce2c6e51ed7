package core

import "fmt"

// Peers lets the cores of a cluster read a block from another core's
// private host tier (peer fetch: vLLM's P2P connectors, LMCache's P2P
// backend). Unlike a Pool it owns no bytes: each member keeps its own tier
// and policy; a member that misses a block below HBM asks the others
// whether their tier holds it. The holder's copy is only read: it stays
// where it is, its policy does not see the read, and nothing pins it (the
// coordinator steps the members in one global event order, so the holder
// may evict it while the read is on the wire: the read still completes,
// as a disaggregated transfer of since-evicted HBM does).
type Peers struct {
	members []*Core // by node
	tier    int     // the tier a peer reads, the same in every member
	// Stage lands a peer read in the reader's own peer tier (a copy kept
	// there, when that tier admits it and has room) and moves it on to HBM
	// over the local link, as LMCache's P2P backend reads into its local
	// CPU buffer; false reads it over the NICs straight into HBM.
	Stage bool
}

// NewPeers lets nodes cores read each other's tier t (t >= 1).
func NewPeers(nodes, t int) (*Peers, error) {
	if nodes < 1 || nodes > 1<<15 || t < 1 || t >= MaxTiers {
		return nil, fmt.Errorf("core: peers of %d nodes over tier %d", nodes, t)
	}
	return &Peers{members: make([]*Core, nodes), tier: t}, nil
}

// Tier is the tier peers read.
func (p *Peers) Tier() int { return p.tier }

// join makes c the member on node n.
func (p *Peers) join(c *Core, n int) error {
	switch {
	case n < 0 || n >= len(p.members):
		return fmt.Errorf("core: node %d outside the %d peers", n, len(p.members))
	case p.members[n] != nil:
		return fmt.Errorf("core: node %d joined the peers twice", n)
	case p.tier >= c.nt || p.tier == c.pt:
		return fmt.Errorf("core: peers read tier %d, which is not a private tier below hbm", p.tier)
	}
	p.members[n] = c
	return nil
}

// Holder is the lowest-numbered node other than self whose peer tier holds
// b (the lowest, so the choice is deterministic), or -1.
func (p *Peers) Holder(self int, b Block) int {
	bit := uint8(1) << p.tier
	for n, m := range p.members {
		if n != self && m != nil && int(b) < len(m.where) && m.where[b]&bit != 0 {
			return n
		}
	}
	return -1
}

// PeerCost is a CostModel that can also time a peer read: the wait before
// a read of bytes from node's peer tier into this core's HBM could start
// and how long it then takes. Without it a cost-based cut weighs the
// prefix only up to its first peer-held block.
type PeerCost interface {
	EstimatePeerLoad(now int64, node int, bytes int64) (backlog, service int64)
}

// RemoteNode is the node a move of b from Remote for request id reads:
// the disaggregated prefill's node, or the peer chosen for b.
func (c *Core) RemoteNode(id ReqID, b Block) int {
	if k := c.reqs[id].RemoteKV; k > 0 {
		return k - 1
	}
	return int(c.peerAt[b])
}

// peerHolder is the peer holding b (recorded in peerAt[b] for the move), or
// -1, always -1 without peers.
func (c *Core) peerHolder(b Block) int {
	if c.peers == nil {
		return -1
	}
	h := c.peers.Holder(c.node, b)
	c.peerAt[b] = int16(h)
	return h
}
