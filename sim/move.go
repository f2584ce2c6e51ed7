package sim

import "kvsim/core"

// Move implements core.Mover: store-and-forward over the route, starting
// once the source copy has landed.
func (s *Sim) Move(now int64, req core.ReqID, b core.Block, bytes int64, from, to int, kind core.MoveKind) {
	need := (int(b) + 1) * s.nt
	if len(s.landed) < need {
		t := make([]int64, max(need, 2*len(s.landed))) // one exact allocation per doubling
		copy(t, s.landed)
		s.landed = t
	}
	if s.err != nil {
		return
	}
	t := max(now, s.landed[int(b)*s.nt+from])
	for _, li := range s.route[from][to] {
		l := s.links[li]
		if t = l.transfer(t, bytes); t > core.MaxTime {
			s.fail(req, "bandwidth of link "+l.name, "transfers queued on it end past the simulated-time limit of %s: %s (%s per %d-byte block) is too slow for this trace",
				limit, fmtRate(l.rate()), span(float64(bytes)*1e9/l.rate()), bytes)
			return
		}
	}
	s.landed[int(b)*s.nt+to] = t
	s.moved[kind] += bytes
	if s.cfg.Tee != nil {
		s.cfg.Tee.Move(now, req, b, bytes, from, to, kind)
	}
	if kind == core.PrefetchMove {
		s.heap.pushMove(t, req, b)
		return
	}
	if req >= 0 {
		rt := s.timing(req)
		if !rt.loads {
			rt.loads, rt.loadStart, rt.loadDone = true, now, now
		}
		rt.loadDone = max(rt.loadDone, t)
	}
}
