package sim

// Group runs several Sims in one virtual time, with the fabric between
// them if any. Sims that share nothing are advanced one after another (their
// order cannot change their results); Sims coupled by a pooled tier or a
// fabric are stepped event by event in global time order, the earliest
// event first (at equal times the fabric's, then the Sims' in index order),
// so a Sim never sees a shared state from its future.
type Group struct {
	sims    []*Sim
	net     *Fabric
	ext     External
	coupled bool
}

// External is a source of events outside the Sims that the group orders
// with theirs: a coordinator's arrivals that depend on what the Sims do
// (closed-loop sessions). At equal times the Sims' events come first.
type External interface {
	NextTime() (t int64, ok bool)
	Fire() error // carry out the earliest
}

// SetExternal adds e to the group's order; the Sims are then stepped event
// by event.
func (g *Group) SetExternal(e External) {
	g.ext = e
	g.coupled = true
}

// NewGroup groups sims; net is the fabric they were built on, or nil.
func NewGroup(sims []*Sim, net *Fabric) *Group {
	g := &Group{sims: sims, net: net, coupled: net != nil}
	for _, s := range sims {
		g.coupled = g.coupled || s.pool != nil
	}
	return g
}

// AdvanceTo is Sim.AdvanceTo for every Sim of the group: each stands at an
// arrival at t, ready for Arrive (or for the next AdvanceTo if the request
// goes elsewhere).
func (g *Group) AdvanceTo(t int64) error {
	if !g.coupled {
		for _, s := range g.sims {
			if err := s.AdvanceTo(t); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range g.sims {
		if err := s.mark(t); err != nil {
			return err
		}
	}
	return g.run(true)
}

// Finish runs every pending event of every Sim and the fabric; each
// Sim's Finish then returns its result.
func (g *Group) Finish() error {
	if !g.coupled {
		return nil // each Sim's Finish runs its own events
	}
	for _, s := range g.sims {
		if s.err != nil {
			return s.err
		}
		s.open = false
		if err := s.settle(); err != nil {
			return err
		}
	}
	return g.run(false)
}

// run processes events in global order: until every Sim stands at its
// arrival (toArrival), or until none is left.
func (g *Group) run(toArrival bool) error {
	for {
		var best *Sim
		var bt int64
		for _, s := range g.sims {
			if (toArrival && s.open) || s.heap.len() == 0 {
				continue
			}
			if t := s.heap.ev[0].t; best == nil || t < bt {
				best, bt = s, t
			}
		}
		if g.net != nil {
			// Past the arrival (every Sim standing at it) the fabric waits.
			if t, ok := g.net.next(); ok && ((best == nil && !toArrival) || (best != nil && t <= bt)) {
				if err := g.net.step(); err != nil {
					return err
				}
				continue
			}
		}
		if g.ext != nil {
			if t, ok := g.ext.NextTime(); ok && ((best == nil && !toArrival) || (best != nil && t < bt)) {
				if err := g.ext.Fire(); err != nil {
					return err
				}
				continue
			}
		}
		if best == nil {
			return nil
		}
		if _, err := best.step(); err != nil {
			return err
		}
	}
}
