package sim

import (
	"errors"
	"fmt"
	"math"

	"kvsim/core"
)

// NICSpec is one node's network interface: every byte the node sends or
// receives over the fabric passes through it.
type NICSpec struct {
	Bandwidth float64 // bytes/s, each direction
	Latency   int64   // ns, one way; a transfer waits the larger of its two ends'
	Lanes     int     // transfers a NIC has in flight per direction, hiding latency (0: 1)
}

// Fabric is the network between a cluster's nodes: a NIC per node, full
// duplex (sending and receiving each have the NIC's bandwidth). A
// cross-node hop of a move holds a lane at both ends (the sender's send
// side, the receiver's receive side), waits out its latency, then moves
// its bytes through both pipes at once (cut-through, as RDMA streams them)
// at the slower one's rate, once both are free. Hops that have waited
// longest start first among those whose pipes are free (FCFS with
// backfill, so a busy receiver does not stall transfers to idle ones).
// The fabric has its own events; a Group runs it in one virtual time with
// the Sims whose hops it carries.
type Fabric struct {
	nics []nic
	heap evHeap
	now  int64
	sims []*Sim // by node
	xf   []netXfer
	free int32 // free slots (index + 1, linked through next)
	wait fifo  // hops waiting for lanes, in arrival order
	lane []int32
	seq  uint64
	kick int64  // time of the pending evKick, if any
	open [2]int // NICs with a lane free, per direction: none, and the wait list need not be scanned
	err  *LimitError
}

// nic is one node's interface: its two directions.
type nic struct {
	dir [2]nicDir // send, receive
	lat int64
}

type nicDir struct {
	bw        float64
	lanes     int
	inFlight  int
	free      int64 // when the pipe ends its bytes
	bytes     int64
	transfers int64
	busy      int64
}

const (
	send = 0
	recv = 1
)

// netXfer is one cross-node hop of a Sim's move.
type netXfer struct {
	s        *Sim
	xi       int32 // the move's index in s
	src, dst int
	bytes    int64
	ready    int64 // latency passed: may take the pipes
	seq      uint64
	next     int32
}

// NewFabric builds a fabric of len(nics) nodes.
func NewFabric(nics []NICSpec) (*Fabric, error) {
	if len(nics) == 0 {
		return nil, errors.New("sim: a fabric needs nodes")
	}
	f := &Fabric{sims: make([]*Sim, len(nics)), kick: -1}
	for i, n := range nics {
		if !(n.Bandwidth > 0) || math.IsInf(n.Bandwidth, 0) {
			return nil, fmt.Errorf("sim: node %d: NIC bandwidth must be finite and > 0", i)
		}
		if n.Latency < 0 || n.Latency > core.MaxTime {
			return nil, fmt.Errorf("sim: node %d: NIC latency %d ns outside 0..%d", i, n.Latency, core.MaxTime)
		}
		l := max(n.Lanes, 1)
		f.nics = append(f.nics, nic{lat: n.Latency, dir: [2]nicDir{{bw: n.Bandwidth, lanes: l}, {bw: n.Bandwidth, lanes: l}}})
	}
	f.open = [2]int{len(nics), len(nics)}
	return f, nil
}

// NICStats describes one node's NIC after a run.
type NICStats struct {
	Node                         int
	Bandwidth                    float64
	SendBytes, RecvBytes         int64
	SendTransfers, RecvTransfers int64
	SendBusyNs, RecvBusyNs       int64
}

// Stats reports every NIC's traffic.
func (f *Fabric) Stats() []NICStats {
	out := make([]NICStats, len(f.nics))
	for i := range f.nics {
		s, r := &f.nics[i].dir[send], &f.nics[i].dir[recv]
		out[i] = NICStats{Node: i, Bandwidth: s.bw, SendBytes: s.bytes, RecvBytes: r.bytes,
			SendTransfers: s.transfers, RecvTransfers: r.transfers, SendBusyNs: s.busy, RecvBusyNs: r.busy}
	}
	return out
}

// PredictNs is a lone transfer of bytes from node a to node b.
func (f *Fabric) PredictNs(a, b int, bytes int64) int64 {
	return core.AddTime(max(f.nics[a].lat, f.nics[b].lat), nsFor(bytes, min(f.nics[a].dir[send].bw, f.nics[b].dir[recv].bw)))
}

// attach registers s as node n's simulator.
func (f *Fabric) attach(s *Sim, n int) error {
	if n < 0 || n >= len(f.nics) {
		return fmt.Errorf("sim: node %d outside the fabric's %d", n, len(f.nics))
	}
	if f.sims[n] != nil {
		return fmt.Errorf("sim: node %d attached twice", n)
	}
	f.sims[n] = s
	return nil
}

// sendHop queues move xi of s, ready now, for its hop from node src to dst.
func (f *Fabric) sendHop(now int64, s *Sim, xi int32, src, dst int, bytes int64) {
	var i int32
	if f.free != 0 {
		i = f.free - 1
		f.free = f.xf[i].next
	} else {
		f.xf = append(f.xf, netXfer{})
		i = int32(len(f.xf) - 1)
	}
	f.seq++
	f.xf[i] = netXfer{s: s, xi: xi, src: src, dst: dst, bytes: bytes, seq: f.seq}
	f.push(&f.wait, i)
	f.now = max(f.now, now)
	f.dispatch(f.now)
}

func (f *Fabric) push(q *fifo, i int32) {
	f.xf[i].next = 0
	if q.tail == 0 {
		q.head = i + 1
	} else {
		f.xf[q.tail-1].next = i + 1
	}
	q.tail = i + 1
}

// dispatch gives lanes to waiting hops, in arrival order where both ends
// have one, then starts every laned hop whose latency has passed and whose
// two pipes are free, the one ready first (then queued first) first.
func (f *Fabric) dispatch(now int64) {
	var prev int32
	for i := f.wait.head; i != 0 && f.open[send] > 0 && f.open[recv] > 0; {
		x := &f.xf[i-1]
		next := x.next
		s, d := &f.nics[x.src].dir[send], &f.nics[x.dst].dir[recv]
		if s.inFlight < s.lanes && d.inFlight < d.lanes {
			f.take(send, s)
			f.take(recv, d)
			x.ready = now + max(f.nics[x.src].lat, f.nics[x.dst].lat)
			if prev == 0 {
				f.wait.head = next
			} else {
				f.xf[prev-1].next = next
			}
			if f.wait.tail == i {
				f.wait.tail = prev
			}
			f.lane = append(f.lane, i-1)
		} else {
			prev = i
		}
		i = next
	}
	for f.err == nil {
		best := -1
		wake := int64(-1)
		for k, xi := range f.lane {
			x := &f.xf[xi]
			if x.ready > now {
				if wake < 0 || x.ready < wake {
					wake = x.ready
				}
				continue
			}
			s, d := &f.nics[x.src].dir[send], &f.nics[x.dst].dir[recv]
			if s.free > now || d.free > now {
				continue
			}
			if b := best; b < 0 || x.ready < f.xf[f.lane[b]].ready || (x.ready == f.xf[f.lane[b]].ready && x.seq < f.xf[f.lane[b]].seq) {
				best = k
			}
		}
		if best < 0 {
			if wake >= 0 && wake != f.kick {
				f.kick = wake
				f.heap.push(wake, evKick, -1)
			}
			return
		}
		xi := f.lane[best]
		f.lane = append(f.lane[:best], f.lane[best+1:]...)
		f.start(now, xi)
	}
}

// take and give keep open: a direction's lanes taken and freed.
func (f *Fabric) take(dir int, d *nicDir) {
	if d.inFlight++; d.inFlight == d.lanes {
		f.open[dir]--
	}
}

func (f *Fabric) give(dir int, d *nicDir) {
	if d.inFlight == d.lanes {
		f.open[dir]++
	}
	d.inFlight--
}

func (f *Fabric) start(now int64, i int32) {
	x := &f.xf[i]
	s, d := &f.nics[x.src].dir[send], &f.nics[x.dst].dir[recv]
	dur := nsFor(x.bytes, min(s.bw, d.bw))
	done := core.AddTime(now, dur)
	if done > core.MaxTime {
		if f.err == nil {
			f.err = &LimitError{Key: "cluster.nic_bandwidth", Msg: fmt.Sprintf(
				"a %d-byte transfer between nodes ends past the simulated-time limit of %s", x.bytes, limit)}
		}
		return
	}
	for _, p := range []*nicDir{s, d} {
		p.free = done
		p.busy += dur
		p.bytes += x.bytes
		p.transfers++
	}
	f.heap.add(event{t: done, kind: evHop, req: i})
}

// next is the fabric's earliest event time.
func (f *Fabric) next() (int64, bool) {
	if f.heap.len() == 0 {
		return 0, false
	}
	return f.heap.ev[0].t, true
}

// step processes the fabric's earliest event.
func (f *Fabric) step() error {
	e := f.heap.pop()
	f.now = e.t
	if e.kind == evHop {
		x := &f.xf[e.req]
		f.give(send, &f.nics[x.src].dir[send])
		f.give(recv, &f.nics[x.dst].dir[recv])
		x.s.heap.push(e.t, evNet, x.xi)
		f.xf[e.req].next, f.free = f.free, e.req+1
	} else if e.t == f.kick {
		f.kick = -1
	}
	f.dispatch(f.now)
	if f.err != nil {
		return f.err
	}
	return nil
}
