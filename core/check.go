package core

import "fmt"

// Check verifies internal accounting (tests call it between events).
func (c *Core) Check() error {
	used := make([]int64, c.nt)
	var pinned int64
	for b, w := range c.where {
		for t := 0; t < c.nt; t++ {
			if w&(1<<t) != 0 {
				used[t] += c.size[b]
			}
		}
		if w&1 != 0 && c.pins[b] > 0 {
			pinned += c.size[b]
		}
	}
	for _, id := range c.running() {
		used[0] += c.reqs[id].scratch
		pinned += c.reqs[id].scratch
	}
	if pinned != c.pinnedHBM {
		return fmt.Errorf("pinned HBM bytes %d, blocks add to %d", c.pinnedHBM, pinned)
	}
	for t := range used {
		if used[t] != c.used[t] {
			return fmt.Errorf("tier %d: used %d, blocks add to %d", t, c.used[t], used[t])
		}
		if used[t] > c.capacity[t] {
			return fmt.Errorf("tier %d: used %d over capacity %d", t, used[t], c.capacity[t])
		}
	}
	for t, p := range c.policies {
		n := 0
		for _, w := range c.where {
			if w&(1<<t) != 0 {
				n++
			}
		}
		if p.Len() != n {
			return fmt.Errorf("tier %d: policy holds %d blocks, tier %d", t, p.Len(), n)
		}
	}
	return nil
}

// running lists the admitted, unfinished requests.
func (c *Core) running() []ReqID {
	idle := make(map[ReqID]bool)
	for _, id := range c.free {
		idle[id] = true
	}
	for _, id := range c.queue[c.qh:] {
		idle[id] = true
	}
	var out []ReqID
	for id := range c.reqs {
		if !idle[ReqID(id)] {
			out = append(out, ReqID(id))
		}
	}
	return out
}
