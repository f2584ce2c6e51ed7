package sim

import "kvsim/core"

// Moves are carried hop by hop over their route, store-and-forward per
// block: a hop joins its link's queue only when its input is ready (the
// first hop when the source copy has landed in the source tier, each later
// hop when the previous one has ended), so every link serves only
// transfers that can move now, first come first served. Whole blocks are
// forwarded rather than streamed in chunks (cut-through) because a block is
// large (tens of MiB) and a request moves many: its blocks pipeline across
// the hops anyway, so chunking would change a request's load time by about
// one block's time on the faster hop while costing an event per chunk.

// xfer is one move the core issued, in flight or waiting for its source.
type xfer struct {
	bytes  int64
	issued int64  // when the core issued it
	ready  int64  // current hop: when its latency has passed and it may take the pipe
	plan   int64  // current hop: its arrival by the link's projection when it joined
	enq    int64  // current hop: when it joined its link
	seq    uint64 // current hop: the order it joined in (ties at a shared device)
	req    core.ReqID
	block  core.Block
	path   []int // link indices hop by hop; netHop: through the fabric to or from peer
	peer   int   // the pool's node holding the copy, for a hop through the fabric
	next   int32 // the next in the queue or list this one is in (index + 1)
	// parked: moves out of this move's destination issued while it was the
	// latest move there; they start when it lands.
	parked   fifo
	from, to int
	hop      int
	kind     core.MoveKind
}

// Move implements core.Mover. The move starts at once if the source copy
// has landed, else when the move bringing it there lands; either way its
// completion is reported when its last hop lands: a prefetch through
// Core.MoveDone, a request's load through loadLanded (and loadsLanded once
// all of that request's loads have landed). A move out of HBM is also
// reported through Core.Drained when its first hop ends. The Tee gets the
// command now, as issued.
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
	s.moved[kind] += bytes
	if s.ev != nil {
		s.logMove(now, req, b, bytes, from, to, kind)
	}
	if s.cfg.Tee != nil {
		s.cfg.Tee.Move(now, req, b, bytes, from, to, kind)
	}
	if kind != core.PrefetchMove && req >= 0 {
		rt := s.timing(req)
		if !rt.loads {
			rt.loads, rt.loadStart, rt.loadDone = true, now, now
			rt.loadBytes, rt.landedBytes = 0, 0
		}
		rt.pending++
		if to == 0 {
			rt.loadBytes += bytes
		}
	}
	i := s.newXfer()
	if from == core.Remote { // another node's copy (a prefill's HBM, a peer's host tier): straight into HBM
		if s.cfg.Net == nil {
			s.fail(req, "cluster", "a move from another node's HBM without a fabric")
			return
		}
		s.xfers[i] = xfer{bytes: bytes, issued: now, req: req, block: b, from: from, to: to, kind: kind,
			path: netOnly, peer: s.core.RemoteNode(req, b)}
		s.enqueue(now, i)
		s.landed[int(b)*s.nt+to] = -int64(i) - 1
		s.dispatch(now)
		return
	}
	s.xfers[i] = xfer{bytes: bytes, issued: now, req: req, block: b, from: from, to: to, kind: kind, path: s.route[from][to]}
	if s.cfg.Net != nil && (from == s.pt || to == s.pt) {
		if h := s.pool.Home(b); h >= 0 && h != s.cfg.Node {
			s.xfers[i].path, s.xfers[i].peer = s.viaNet[from][to], h
		}
	}
	// landed < 0 names the move still bringing the copy there (-index-1).
	if src := s.landed[int(b)*s.nt+from]; src < 0 {
		s.pushList(&s.xfers[-src-1].parked, i)
	} else {
		s.enqueue(now, i)
	}
	s.landed[int(b)*s.nt+to] = -int64(i) - 1
	s.dispatch(now)
}

// loadLanded is the engines' hook for a request's loads: it is called (from
// the event of the landing, so an engine may push events and call the
// core) each time a load move of request req lands, with s.req[req]
// updated: pending is the number still on the links, loadDone is now,
// landedBytes of loadBytes (the bytes the loads bring into HBM) have
// landed. An engine overlapping compute with loads layer by layer may
// start req's prefill once landedBytes x layers >= loadBytes; when pending
// is 0 every load has landed and loadsLanded follows.
func (s *Sim) loadLanded(now int64, req core.ReqID) {
	if s.eng == nil {
		s.simpleLoadLanded(req)
	}
	if s.req[req].pending == 0 {
		s.loadsLanded(now, req)
	}
}

// loadsLanded is called when the last pending load move of request req has
// landed (s.req[req].pending dropped to 0; loadDone is now). Only then is
// the end of req's loads known: an engine that holds req's prefill until
// its KV is in HBM schedules it from here.
func (s *Sim) loadsLanded(now int64, req core.ReqID) {
	if s.eng != nil {
		s.eng.sch.Loaded(now, req)
		return
	}
	s.simpleLoadsLanded(now, req)
}

// newXfer takes a free transfer slot (reused: no allocation once the
// slice covers the most moves ever in flight at once).
func (s *Sim) newXfer() int32 {
	if i := s.freeX; i != 0 {
		s.freeX = s.xfers[i-1].next
		return i - 1
	}
	s.xfers = append(s.xfers, xfer{})
	return int32(len(s.xfers) - 1)
}

func (s *Sim) pushList(q *fifo, i int32) {
	s.xfers[i].next = 0
	if q.tail == 0 {
		q.head = i + 1
	} else {
		s.xfers[q.tail-1].next = i + 1
	}
	q.tail = i + 1
}

// popList removes the head of q; -1 if q is empty.
func (s *Sim) popList(q *fifo) int32 {
	if q.head == 0 {
		return -1
	}
	i := q.head - 1
	q.head = s.xfers[i].next
	if q.head == 0 {
		q.tail = 0
	}
	return i
}

// hopLink is the link of move i's current hop.
func (s *Sim) hopLink(i int32) *link {
	x := &s.xfers[i]
	return s.links[x.path[x.hop]]
}

// netHop marks a hop through the fabric in a move's path.
const netHop = -1

// netOnly is the path of a move from another node's HBM (core.Remote).
var netOnly = []int{netHop}

// netDone ends move i's hop through the fabric (its evNet).
func (s *Sim) netDone(now int64, i int32) {
	x := &s.xfers[i]
	out, b := x.hop == 0 && x.from == 0, x.block
	x.hop++
	if x.hop < len(x.path) {
		s.enqueue(now, i)
	} else {
		s.land(now, i)
	}
	if out {
		s.drained(now, b)
	}
	s.dispatch(now)
}

// enqueue puts move i's current hop, ready now, on its link.
func (s *Sim) enqueue(now int64, i int32) {
	x := &s.xfers[i]
	if x.path[x.hop] == netHop {
		src, dst := x.peer, s.cfg.Node // a read from the remote copy
		if x.to == s.pt {
			src, dst = dst, src
		}
		s.cfg.Net.sendHop(now, s, i, src, dst, x.bytes)
		return
	}
	l := s.hopLink(i)
	s.xseq++
	x.enq, x.seq = now, s.xseq
	if x.plan = l.project(now, x.bytes); x.plan > core.MaxTime {
		s.linkFail(x.req, l, x.bytes)
		return
	}
	if l.inFlight < len(l.lanes) {
		s.takeLane(now, l, i)
	} else {
		s.pushList(&l.waiting, i)
	}
}

// takeLane starts move i's latency on l at now.
func (s *Sim) takeLane(now int64, l *link, i int32) {
	l.inFlight++
	s.xfers[i].ready = now + l.latency // both at most core.MaxTime: no wrap
	s.pushList(&l.laned, i)
}

func (s *Sim) linkFail(req core.ReqID, l *link, bytes int64) {
	s.fail(req, "bandwidth of link "+l.name, "transfers queued on it end past the simulated-time limit of %s: %s (%s per %d-byte block) is too slow for this trace",
		limit, fmtRate(l.rate()), span(float64(bytes)*1e9/l.rate()), bytes)
}

// dispatch starts every transfer that can move at now: the head of a
// link's lane queue whose latency has passed, once the link's pipe and its
// shared devices are free. Links compete only for devices; the transfer
// ready first (then joined first) wins. What cannot start now is woken
// later: by its pipe's hop event, a device's or its latency's evKick.
func (s *Sim) dispatch(now int64) {
	for s.err == nil {
		var best *link
		var bx *xfer
	links:
		for _, l := range s.links {
			if l.laned.head == 0 || l.pipeFree > now {
				continue
			}
			x := &s.xfers[l.laned.head-1]
			if x.ready > now {
				if l.kickAt != x.ready {
					l.kickAt = x.ready
					s.heap.push(x.ready, evKick, -1)
				}
				continue
			}
			for _, d := range l.dev {
				if d != nil && d.free > now {
					continue links
				}
			}
			if bx == nil || x.ready < bx.ready || (x.ready == bx.ready && x.seq < bx.seq) {
				best, bx = l, x
			}
		}
		if best == nil {
			return
		}
		s.start(now, best)
	}
}

// start moves the bytes of the head of l's lane queue from now.
func (s *Sim) start(now int64, l *link) {
	i := s.popList(&l.laned)
	x := &s.xfers[i]
	move := nsFor(x.bytes, l.rate())
	done := core.AddTime(now, move)
	if done > core.MaxTime {
		s.linkFail(x.req, l, x.bytes)
		return
	}
	l.pipeFree = done
	l.pipe = max(l.pipe, done)
	l.bytes += x.bytes
	l.byKind[x.kind] += x.bytes
	l.transfers++
	l.busy += move
	for _, d := range l.dev {
		if d != nil {
			held := nsFor(x.bytes, d.bw) // at most move: no later than done
			d.free = now + held
			d.plan = max(d.plan, d.free)
			d.busy += held
			d.bytes += x.bytes
			d.transfers++
			if d.free < done && d.kickAt != d.free {
				d.kickAt = d.free
				s.heap.push(d.free, evKick, -1)
			}
		}
	}
	if s.onHop != nil {
		s.onHop(hopStart, l, x, now)
	}
	if s.ev != nil {
		s.logHop(now, l, x)
	}
	s.heap.add(event{t: done, kind: evHop, req: i, block: x.block}) // block tells a reader of the heap what moves
}

// hopDone ends the current hop of move i (its evHop): the lane goes to the
// next waiting transfer, and the move goes on to its next hop or lands.
func (s *Sim) hopDone(now int64, i int32) {
	l := s.hopLink(i)
	if s.onHop != nil {
		s.onHop(hopEnd, l, &s.xfers[i], now)
	}
	l.inFlight--
	if w := s.popList(&l.waiting); w >= 0 {
		s.takeLane(now, l, w)
	}
	x := &s.xfers[i]
	out, b := x.hop == 0 && x.from == 0, x.block
	x.hop++
	if x.hop < len(x.path) {
		s.enqueue(now, i)
	} else {
		s.land(now, i)
	}
	if out { // store-and-forward: the block's last byte has left HBM
		s.drained(now, b)
	}
	s.dispatch(now)
}

// drained tells the core that a move of b has left HBM, and retries the
// simple engine's decodes waiting for HBM (the batched engine's retry at
// its next step).
func (s *Sim) drained(now int64, b core.Block) {
	s.core.Drained(now, b)
	if len(s.stalled) > 0 {
		s.retryStalled(now)
	}
}

// land ends move i: its copy is in place, the moves parked on it start,
// and whoever waits for it hears.
func (s *Sim) land(now int64, i int32) {
	x := s.xfers[i]
	if s.ev != nil {
		s.logLand(now, &x)
	}
	if slot := &s.landed[int(x.block)*s.nt+x.to]; *slot == -int64(i)-1 {
		*slot = now
		if x.to == s.pt {
			s.pool.Publish(x.block) // the write is done: every node may read it
		}
	}
	for p := s.popList(&x.parked); p >= 0; p = s.popList(&x.parked) {
		s.enqueue(now, p)
	}
	s.xfers[i].next, s.freeX = s.freeX, i+1
	switch {
	case x.kind == core.PrefetchMove:
		s.core.MoveDone(now, x.req, x.block)
	case x.req >= 0:
		rt := &s.req[x.req]
		rt.loadDone = max(rt.loadDone, now)
		rt.pending--
		if x.to == 0 {
			rt.landedBytes += x.bytes
		}
		s.loadLanded(now, x.req)
	}
}

// hopPhase says what a test hook sees.
type hopPhase uint8

const (
	hopStart hopPhase = iota // the hop's bytes start moving
	hopEnd                   // the hop ends
)
