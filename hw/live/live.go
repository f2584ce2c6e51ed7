// Package live is the real body as a peer of the simulator: it runs the
// core and the batched engine's step scheduler (core/sched, the same code
// the simulator runs) on a clock of its own, with requests arriving at
// their times, moves carried out concurrently on the stores and their
// completions driving the core, as they do on a serving node.
//
// One goroutine, the loop in Run, owns the core and the scheduler. A move
// the core issues becomes an operation on two keys (block, tier): it reads
// its source and writes its destination, and starts once every earlier
// operation on those keys allows it (reads share a key, a write or delete
// has it alone), so a copy is never read before it has landed nor deleted
// while read. Started moves go to the workers of their link (from, to),
// as many as its lanes; a worker copies the block (Get, then Put) and
// posts the completion back to the loop. GPU compute is the scheduler's
// steps, each step's time from the scenario's step model, waited out on
// the clock.
//
// With Options.Virtual the clock is virtual and moves take the time a
// function gives (tests: the same completions in the same order give the
// same decisions, whatever the machine's timing).
package live

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"time"

	"kvsim/core"
	"kvsim/core/sched"
	"kvsim/hw/ioengine"
	"kvsim/hw/payload"
	"kvsim/hw/store"
	"kvsim/internal/minheap"
)

// Options configure a live body.
type Options struct {
	Stores []store.Store // one per tier, tier 0 being HBM
	// RealBytes maps a block's model size to the bytes really moved;
	// MaxBytes is its largest result.
	RealBytes func(modelBytes int64) int
	MaxBytes  int
	// ModelBytes inverts RealBytes for blocks a store kept from an earlier
	// run (Warm); nil: stores start as they are, unknown to the core.
	ModelBytes func(realBytes int) (modelBytes int64, ok bool)
	Verify     bool // check every block read back
	// Lanes[from][to] is how many moves from -> to run at once (<= 0: 1).
	Lanes [][]int
	// Step times a step of the engine; Budget is its token budget (0:
	// sched.DefaultMaxBatchedTokens).
	Step   sched.StepModel
	Budget int
	// Predict, if set, is the model's time for a move of n real bytes.
	Predict   func(from, to int, n int64) int64
	TierNames []string
	// Stopped, if set and true, abandons the run at the loop's next turn.
	Stopped func() bool
	// Virtual, if set, runs on a virtual clock: a move's bytes are copied
	// at once and it completes Virtual(from, to, n) ns later; steps and
	// arrivals take no real time.
	Virtual func(from, to int, n int64) int64
}

// LinkStat is what happened on one link (from -> to) of the live run.
type LinkStat struct {
	From, To  int
	Count     int64 // moves whose copy was kept
	Bytes     int64
	BusyNs    int64 // Get + Put time summed over moves
	Failed    int64
	Measured  core.Hist // ns per move (Get + Put)
	Wait      core.Hist // ns from issue to the start of the copy (ordering and lanes)
	Predicted core.Hist // ns per move, as the model predicts it
}

// Result is what a live run did.
type Result struct {
	Records []core.Record // finished requests, in finishing order (HitBlocks copied)
	Stats   core.Stats
	Links   []*LinkStat // links that carried traffic, in (from, to) order
	Steps   int64
	BusyNs  int64 // the steps' time in all (as the step model gives it)
	WallNs  int64 // first arrival's clock to the end
	// ArrivalLag is how late each arrival was taken up after its time;
	// StepLag how late each step's end was seen after its due time: the
	// clock's and the machine's slack.
	ArrivalLag, StepLag core.Hist
	Lag                 map[int64]int64 // per request (trace position): its arrival's lag, ns
	Checked, Corrupt    int64
	Lost, StoreEvicted  []int64 // per tier
	Errors              []string
	Warmed              []int // per tier: recovered blocks placed in the core
}

// spinBelow is the wait the loop polls for rather than sleeps.
const spinBelow = time.Millisecond

// ErrSessions is Run's error for a closed-loop source.
var ErrSessions = errors.New("closed-loop sessions are not replayed live (replay them with --mirror)")

// ErrStopped is Run's error once Options.Stopped says so.
var ErrStopped = errors.New("live: replay stopped")

// op kinds
const (
	opMove uint8 = iota
	opDelete
	opFill // write the computed payload into HBM if it is not there
	opPoll // ask a store what it dropped on its own or found lost
)

type op struct {
	kind     uint8
	blk      core.Block
	from, to int
	req      core.ReqID
	mkind    core.MoveKind
	n        int // real bytes
	issued   int64
	started  int64
	// worker results
	getErr, putErr error
	corrupt        bool
	d              int64 // Get + Put ns
	// opPoll results
	evicted, failed, gone []int32
}

// timer kinds
const (
	tArrival uint8 = iota
	tStep
	tWake
	tMoveDone // virtual clock: a move's completion
)

type timer struct {
	t    int64
	seq  uint64
	kind uint8
	req  core.ReqID
	op   *op
}

// timerBefore orders timers by (time, sequence).
func timerBefore(a, b *timer) bool { return a.t < b.t || a.t == b.t && a.seq < b.seq }

// guarded serialises a store that is not store.Concurrent.
type guarded struct {
	store.Store
	mu sync.Mutex
}

func (g *guarded) Put(b int32, d []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Store.Put(b, d)
}

func (g *guarded) Get(b int32, d []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Store.Get(b, d)
}

func (g *guarded) Delete(b int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Store.Delete(b)
}

func (g *guarded) Has(b int32) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Store.Has(b)
}

// agent is the one goroutine that deletes from a tier's store, writes
// computed payloads (HBM's), and asks it what it dropped (a store's capabilities stay with one goroutine): the
// loop never waits on a store's lock, which a worker may hold through a
// bucket's fdatasync.
type agent struct {
	tasks  chan *op
	queue  []*op
	busy   bool
	polled bool // a poll is queued or running
	// missed: blocks a Get found gone from this store before its poll
	// reported them evicted (counted once, when the Get found them).
	missed map[core.Block]bool
}

type link struct {
	from, to int
	lanes    int
	busy     int   // lanes at work
	queue    []*op // ops ready to start, waiting for a lane
	qh       int
	work     chan *op // to its workers (real clock)
	stat     LinkStat
	used     bool
}

// Body is the live body: the core's Mover and the scheduler's Host.
type Body struct {
	o      Options
	nt     int
	c      *core.Core
	sch    *sched.Scheduler
	stores []store.Store // guarded where not Concurrent
	raw    []store.Store

	start time.Time
	vnow  int64 // virtual clock

	freeO  []*op
	keys   map[int64][]*op // (block, tier) -> its unfinished ops in issue order
	links  []*link         // [from*nt+to]
	agents []*agent        // per tier
	done   chan *op        // completions from the workers
	inFl   int             // moves issued, not completed
	wg     sync.WaitGroup
	bufs   []*ioengine.Arena
	lbuf   []byte // the loop's own buffer (fills, verification)
	larna  *ioengine.Arena

	tm  []timer
	tsq uint64

	pend      []int32 // per request: loads in flight
	loadStart []int64
	loadDone  []int64
	hadLoads  []bool

	lost []lostCopy
	res  Result
}

type lostCopy struct {
	blk  core.Block
	tier int
}

// New builds a live body over its stores for a core built from cfg.
func New(cfg core.Config, o Options, obs core.Observer) (*Body, error) {
	n := len(o.Stores)
	if n == 0 || o.RealBytes == nil || o.MaxBytes <= 0 || o.Step == nil || n != len(cfg.Tiers) {
		return nil, fmt.Errorf("live: body needs a store per tier, a block size and a step model")
	}
	b := &Body{o: o, nt: n, keys: map[int64][]*op{}, raw: o.Stores}
	b.res.Lost, b.res.StoreEvicted, b.res.Warmed = make([]int64, n), make([]int64, n), make([]int, n)
	b.res.Lag = map[int64]int64{}
	for _, s := range o.Stores {
		if _, ok := s.(store.Concurrent); ok || o.Virtual != nil {
			b.stores = append(b.stores, s)
		} else {
			b.stores = append(b.stores, &guarded{Store: s})
		}
	}
	a, err := ioengine.NewArena(o.MaxBytes)
	if err != nil {
		return nil, err
	}
	b.larna, b.lbuf = a, a.Slice(0, o.MaxBytes)
	b.links = make([]*link, n*n)
	b.agents = make([]*agent, n)
	for t := range b.agents {
		b.agents[t] = &agent{missed: map[core.Block]bool{}}
	}
	for f := range n {
		for t := range n {
			if f == t {
				continue
			}
			lanes := 1
			if f < len(o.Lanes) && t < len(o.Lanes[f]) && o.Lanes[f][t] > 0 {
				lanes = o.Lanes[f][t]
			}
			b.links[f*n+t] = &link{from: f, to: t, lanes: lanes, stat: LinkStat{From: f, To: t}}
		}
	}
	pt := cfg.PageTokens
	if pt <= 0 {
		pt = cfg.BlockTokens
	}
	b.sch = sched.New(b, o.Step, o.Budget, pt)
	c, err := core.New(cfg, b, func(r *core.Record) {
		rec := *r
		rec.HitBlocks = append([]int64(nil), r.HitBlocks...)
		b.res.Records = append(b.res.Records, rec)
		if obs != nil {
			obs(r)
		}
	})
	if err != nil {
		b.larna.Close()
		return nil, err
	}
	b.c = c
	b.sch.Attach(c)
	return b, nil
}

// Core is the body's core (tests inspect it).
func (b *Body) Core() *core.Core { return b.c }

func (b *Body) now() int64 {
	if b.o.Virtual != nil {
		return b.vnow
	}
	return time.Since(b.start).Nanoseconds()
}

func (b *Body) stopped() bool { return b.o.Stopped != nil && b.o.Stopped() }

func (b *Body) key(blk core.Block, tier int) int64 { return int64(blk)*int64(b.nt) + int64(tier) }

// newOp takes an operation from the free list (workers get pointers: an
// op is never moved while one of them holds it).
func (b *Body) newOp(o op) *op {
	if n := len(b.freeO); n > 0 {
		p := b.freeO[n-1]
		b.freeO = b.freeO[:n-1]
		*p = o
		return p
	}
	p := new(op)
	*p = o
	return p
}

// enqueue adds op i to the queues of its keys and starts it if it may.
func (b *Body) enqueue(i *op) {
	o := i
	switch o.kind {
	case opMove:
		ks, kd := b.key(o.blk, o.from), b.key(o.blk, o.to)
		b.keys[ks] = append(b.keys[ks], i)
		b.keys[kd] = append(b.keys[kd], i)
	default:
		k := b.key(o.blk, o.to)
		b.keys[k] = append(b.keys[k], i)
	}
	b.try(i)
}

// may says whether op i may start: on its source key only reads are
// ahead of it, on its destination key nothing is.
func (b *Body) may(i *op) bool {
	o := i
	if o.kind == opMove {
		for _, p := range b.keys[b.key(o.blk, o.from)] {
			if p == i {
				break
			}
			if p.kind != opMove || p.from != o.from { // a write or a delete of that copy is ahead
				return false
			}
		}
	}
	q := b.keys[b.key(o.blk, o.to)]
	return len(q) > 0 && q[0] == i
}

// try starts op i if it may: a move goes to its link, a delete or fill
// runs at once (in the loop).
func (b *Body) try(i *op) {
	o := i
	if o.started >= 0 || !b.may(i) {
		return
	}
	o.started = b.now()
	switch o.kind {
	case opDelete:
		if b.o.Virtual != nil {
			b.stores[o.to].Delete(o.blk)
			b.finish(i)
			return
		}
		b.toAgent(o.to, i)
	case opFill:
		if b.o.Virtual == nil { // a payload's bytes: off the loop
			b.toAgent(0, i)
			return
		}
		if !b.stores[0].Has(o.blk) {
			buf := b.lbuf[:o.n]
			payload.Fill(buf, o.blk)
			if err := b.stores[0].Put(o.blk, buf); err != nil {
				b.fail(o.blk, 0, err)
			}
		}
		b.finish(i)
	default:
		l := b.links[o.from*b.nt+o.to]
		l.queue = append(l.queue, i)
		b.dispatch(l)
	}
}

// toAgent queues op i for tier t's agent.
func (b *Body) toAgent(t int, i *op) {
	b.inFl++
	a := b.agents[t]
	a.queue = append(a.queue, i)
	b.agentNext(t)
}

// agentNext hands tier t's agent its next task if it is idle.
func (b *Body) agentNext(t int) {
	a := b.agents[t]
	if a.busy || len(a.queue) == 0 {
		return
	}
	i := a.queue[0]
	a.queue = a.queue[1:]
	a.busy = true
	if a.tasks == nil {
		a.tasks = make(chan *op, 1)
		st, raw := b.stores[t], b.raw[t]
		buf := make([]byte, b.o.MaxBytes)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for o := range a.tasks {
				switch o.kind {
				case opDelete:
					st.Delete(o.blk)
				case opFill:
					if !st.Has(o.blk) {
						payload.Fill(buf[:o.n], o.blk)
						o.putErr = st.Put(o.blk, buf[:o.n])
					}
				case opPoll:
					if d, ok := raw.(store.Dropper); ok {
						o.evicted, o.failed = d.Dropped()
					}
					if l, ok := raw.(store.LossReporter); ok {
						o.gone = l.Lost()
					}
				}
				b.done <- o
			}
		}()
	}
	a.tasks <- i // never blocks: one task out at a time
}

// poll has tier t's store asked what it dropped on its own, once the
// poll already asked for (if any) is done.
func (b *Body) poll(t int) {
	_, d := b.raw[t].(store.Dropper)
	_, l := b.raw[t].(store.LossReporter)
	if !d && !l {
		return
	}
	if b.o.Virtual != nil {
		b.drops(t)
		return
	}
	if a := b.agents[t]; !a.polled {
		a.polled = true
		b.toAgent(t, b.newOp(op{kind: opPoll, to: t, req: core.Background, started: -1}))
	}
}

// agentDone takes an agent's completed task in the loop.
func (b *Body) agentDone(now int64, i *op) {
	t := i.to
	a := b.agents[t]
	a.busy = false
	b.inFl--
	if i.kind == opDelete || i.kind == opFill {
		if i.putErr != nil {
			b.fail(i.blk, t, i.putErr)
		}
		b.finish(i)
	} else {
		a.polled = false
		for _, k := range i.evicted {
			if a.missed[k] {
				delete(a.missed, k)
				continue
			}
			b.lost = append(b.lost, lostCopy{k, t})
			b.res.StoreEvicted[t]++
		}
		for _, k := range i.failed {
			b.fail(k, t, errors.New("lost with a bucket whose write failed"))
		}
		for _, k := range i.gone {
			b.fail(k, t, errors.New("dropped by the store"))
		}
		i.evicted, i.failed, i.gone = nil, nil, nil
		b.freeO = append(b.freeO, i)
		b.reportLost(now)
	}
	b.agentNext(t)
}

// complete takes a completion from the workers or agents.
func (b *Body) complete(now int64, i *op) {
	if i.kind == opMove {
		b.moveDone(now, i)
	} else {
		b.agentDone(now, i)
	}
}

// dispatch starts queued moves of l while it has free lanes.
func (b *Body) dispatch(l *link) {
	for l.busy < l.lanes && l.qh < len(l.queue) {
		i := l.queue[l.qh]
		l.qh++
		l.busy++
		i.started = b.now()
		if b.o.Virtual != nil {
			b.copyBlock(i, b.lbuf)
			minheap.Push(&b.tm, timer{t: b.vnow + max(b.o.Virtual(l.from, l.to, int64(i.n)), 0), seq: b.seq(), kind: tMoveDone, op: i}, timerBefore)
			continue
		}
		if l.work == nil {
			b.startWorkers(l)
		}
		l.work <- i // never blocks: at most lanes are out
	}
	if l.qh == len(l.queue) {
		l.queue, l.qh = l.queue[:0], 0
	}
}

func (b *Body) seq() uint64 { b.tsq++; return b.tsq }

// startWorkers starts l's lanes, each with its own aligned buffer.
func (b *Body) startWorkers(l *link) {
	l.work = make(chan *op, l.lanes)
	for range l.lanes {
		a, err := ioengine.NewArena(b.o.MaxBytes)
		var buf []byte
		if err == nil {
			b.bufs = append(b.bufs, a)
			buf = a.Slice(0, b.o.MaxBytes)
		} else {
			buf = make([]byte, b.o.MaxBytes)
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for o := range l.work {
				b.copyBlock(o, buf)
				b.done <- o
			}
		}()
	}
}

// copyBlock carries out a move's bytes: Get from its source, check, Put.
// It runs on a worker and writes only o's result fields, which the loop
// reads after the completion's channel receive.
func (b *Body) copyBlock(o *op, buf []byte) {
	buf = buf[:o.n]
	t0 := time.Now()
	got, err := b.stores[o.from].Get(o.blk, buf)
	if err == nil && got != o.n {
		err = fmt.Errorf("read %d bytes, want %d", got, o.n)
	}
	if err != nil {
		o.getErr = err
		o.d = time.Since(t0).Nanoseconds()
		return
	}
	if b.o.Verify && !payload.Verify(buf, o.blk) {
		o.corrupt = true
		o.getErr = errors.New("payload does not verify")
		o.d = time.Since(t0).Nanoseconds()
		return
	}
	o.putErr = b.stores[o.to].Put(o.blk, buf)
	o.d = time.Since(t0).Nanoseconds()
}

// finish removes op i from its keys' queues, frees it, and starts what
// was waiting behind it.
func (b *Body) finish(i *op) {
	o := *i
	var ks [2]int64
	nk := 1
	ks[0] = b.key(o.blk, o.to)
	if o.kind == opMove {
		ks[1] = b.key(o.blk, o.from)
		nk = 2
	}

	b.freeO = append(b.freeO, i)
	for _, k := range ks[:nk] {
		q := b.keys[k]
		for j, x := range q {
			if x == i {
				q = append(q[:j], q[j+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(b.keys, k)
			continue
		}
		b.keys[k] = q
		for _, x := range q { // the ops now at the front (reads may share it)
			b.try(x)
			if x.kind != opMove || x.from != int(k%int64(b.nt)) {
				break
			}
		}
	}
}

func (b *Body) fail(blk core.Block, tier int, err error) {
	b.lost = append(b.lost, lostCopy{blk, tier})
	b.res.Lost[tier]++
	if len(b.res.Errors) < 8 {
		name := fmt.Sprint(tier)
		if tier < len(b.o.TierNames) {
			name = b.o.TierNames[tier]
		}
		b.res.Errors = append(b.res.Errors, fmt.Sprintf("block %d, tier %s: %v", blk, name, err))
	}
}

// drops collects what store t dropped on its own or found lost.
func (b *Body) drops(t int) {
	if s, ok := b.raw[t].(store.Dropper); ok {
		ev, failed := s.Dropped()
		for _, k := range ev {
			b.lost = append(b.lost, lostCopy{k, t})
			b.res.StoreEvicted[t]++
		}
		for _, k := range failed {
			b.fail(k, t, errors.New("lost with a bucket whose write failed"))
		}
	}
	if s, ok := b.raw[t].(store.LossReporter); ok {
		for _, k := range s.Lost() {
			b.fail(k, t, errors.New("dropped by the store"))
		}
	}
}

// moveDone takes a move's completion in the loop: figures, losses, and
// what the core and the scheduler hear.
func (b *Body) moveDone(now int64, i *op) {
	o := *i
	l := b.links[o.from*b.nt+o.to]
	l.busy--
	l.used = true
	b.inFl--
	switch {
	case o.getErr != nil:
		if o.corrupt {
			b.res.Corrupt++
		}
		if !errors.Is(o.getErr, store.ErrNotStored) || !b.evictedByStore(o.blk, o.from, o.to) {
			l.stat.Failed++
			b.stores[o.from].Delete(o.blk)
			b.fail(o.blk, o.from, o.getErr)
		}
		if o.to == 0 { // the request recomputes it
			buf := b.lbuf[:o.n]
			payload.Fill(buf, o.blk)
			_ = b.stores[0].Put(o.blk, buf)
		} else {
			b.lost = append(b.lost, lostCopy{o.blk, o.to}) // never arrived
		}
	case o.putErr != nil:
		l.stat.Failed++
		b.fail(o.blk, o.to, o.putErr)
		b.poll(o.to)
	default:
		if b.o.Verify {
			b.res.Checked++
		}
		st := &l.stat
		st.Count++
		st.Bytes += int64(o.n)
		st.BusyNs += o.d
		st.Measured.Add(o.d)
		st.Wait.Add(o.started - o.issued)
		if b.o.Predict != nil {
			st.Predicted.Add(b.o.Predict(o.from, o.to, int64(o.n)))
		}
		b.poll(o.to)
	}
	b.finish(i)
	b.dispatch(l)
	switch {
	case o.mkind == core.PrefetchMove:
		b.c.MoveDone(now, o.req, o.blk)
	case o.req >= 0:
		b.loadDone[o.req] = now
		if b.pend[o.req]--; b.pend[o.req] == 0 {
			b.sch.Loaded(now, o.req)
		}
	}
	if o.from == 0 {
		b.c.Drained(now, o.blk)
	}
	b.reportLost(now)
}

// evictedByStore says whether a Get that found blk gone from store t
// met a store that evicts on its own: a miss the core could not foresee,
// not a loss. On the virtual clock the store is asked at once; on the
// wall clock a store that evicts is taken at its word (the poll that
// later reports blk is not counted again).
func (b *Body) evictedByStore(blk core.Block, t, to int) bool {
	if b.o.Virtual != nil {
		b.drops(t)
		for _, l := range b.lost {
			if l.blk == blk && l.tier == t {
				return true
			}
		}
		return false
	}
	if _, ok := b.raw[t].(store.Dropper); !ok {
		return false
	}
	b.agents[t].missed[blk] = true
	b.lost = append(b.lost, lostCopy{blk, t})
	b.res.StoreEvicted[t]++
	b.poll(t)
	return true
}

func (b *Body) reportLost(now int64) {
	for _, l := range b.lost {
		b.c.Lost(now, l.blk, l.tier)
	}
	b.lost = b.lost[:0]
}

func (b *Body) grow(id core.ReqID) {
	for int(id) >= len(b.pend) {
		b.pend = append(b.pend, 0)
		b.loadStart = append(b.loadStart, 0)
		b.loadDone = append(b.loadDone, 0)
		b.hadLoads = append(b.hadLoads, false)
	}
}

// Move implements core.Mover.
func (b *Body) Move(now int64, req core.ReqID, blk core.Block, bytes int64, from, to int, kind core.MoveKind) {
	if from < 0 || to < 0 {
		b.fail(blk, max(to, 0), errors.New("a move from another node: not in a live replay of one instance"))
		return
	}
	if kind != core.PrefetchMove && req >= 0 {
		b.grow(req)
		if !b.hadLoads[req] {
			b.hadLoads[req], b.loadStart[req], b.loadDone[req] = true, now, now
		}
		b.pend[req]++
	}
	b.inFl++
	b.enqueue(b.newOp(op{kind: opMove, blk: blk, from: from, to: to, req: req, mkind: kind, n: b.o.RealBytes(bytes), issued: now, started: -1}))
}

// Drop implements core.Mover: the copy is deleted once the operations
// ahead of it on that copy are done.
func (b *Body) Drop(now int64, blk core.Block, tier int) {
	b.enqueue(b.newOp(op{kind: opDelete, blk: blk, to: tier, req: core.Background, issued: now, started: -1}))
}

// Prefill implements core.Mover: the request's blocks not in HBM and not
// on their way there are "computed" (their payloads written into HBM, in
// order after what is ahead on each copy); the scheduler runs its chunks.
func (b *Body) Prefill(now int64, req core.ReqID, cached, compute int) {
	b.grow(req)
	for _, blk := range b.c.Request(req).Blocks {
		b.enqueue(b.newOp(op{kind: opFill, blk: blk, to: 0, req: req, n: b.o.RealBytes(b.c.BlockBytes(blk)), issued: now, started: -1}))
	}
	b.sch.Prefill(now, req, cached, compute)
}

// Decode implements core.Mover.
func (b *Body) Decode(_ int64, req core.ReqID, tokens int) { b.sch.Decode(req, tokens) }

// Wake implements core.Mover.
func (b *Body) Wake(at int64, req core.ReqID) {
	minheap.Push(&b.tm, timer{t: at, seq: b.seq(), kind: tWake, req: req}, timerBefore)
}

// Preempted implements core.Mover.
func (b *Body) Preempted(_ int64, req core.ReqID) { b.sch.Preempt(req) }

// Loading implements sched.Host.
func (b *Body) Loading(id core.ReqID) bool { b.grow(id); return b.pend[id] > 0 }

// TakeLoadNs implements sched.Host.
func (b *Body) TakeLoadNs(id core.ReqID) int64 {
	b.grow(id)
	if !b.hadLoads[id] {
		return 0
	}
	b.hadLoads[id] = false
	return b.loadDone[id] - b.loadStart[id]
}

// warm places what the stores kept from an earlier run in the core's
// tiers (core.Preload), deleting what does not fit or has no model size.
func (b *Body) warm() {
	if b.o.ModelBytes == nil {
		return
	}
	for t, s := range b.raw {
		r, ok := s.(store.Recoverer)
		if !ok || t == 0 {
			continue
		}
		keys, sizes := r.Blocks()
		for i, k := range keys {
			if m, ok := b.o.ModelBytes(sizes[i]); ok && k >= 0 && b.c.Preload(t, k, m) {
				b.res.Warmed[t]++
				continue
			}
			s.Delete(k)
		}
	}
}

// prime has every empty memory store take and drop one block before the
// clock starts: its first chunk is mapped and faulted in then (hundreds of
// ms on a busy machine), not inside the first request's admission.
// Durable and remote stores are left alone (a block there is a write).
func (b *Body) prime() {
	for _, s := range b.stores {
		if _, durable := s.(store.Recoverer); durable {
			continue
		}
		if _, remote := s.(store.LossReporter); remote || s.Has(0) {
			continue
		}
		if s.Put(0, b.lbuf[:b.o.MaxBytes]) == nil {
			s.Delete(0)
		}
	}
}

// kick starts the next step if the GPU is idle and anything can run.
func (b *Body) kick(now int64) {
	bt, ok := b.sch.Next(now)
	if !ok {
		return
	}
	ns := b.o.Step.StepNs(bt)
	if !(ns < float64(core.MaxTime)) {
		ns = float64(core.MaxTime)
	}
	d := int64(math.Round(ns))
	b.res.Steps++
	b.res.BusyNs += d
	minheap.Push(&b.tm, timer{t: now + d, seq: b.seq(), kind: tStep}, timerBefore)
}

// Run replays src: requests arrive at their Arrival on the body's clock
// (0 being the call's start). It returns when every request finished and
// every move landed, or at the first error.
func (b *Body) Run(src core.Source) (*Result, error) {
	if _, ok := src.(core.Sessions); ok {
		return nil, ErrSessions
	}
	b.warm()
	nl := 0
	for _, l := range b.links {
		if l != nil {
			nl += l.lanes
		}
	}
	b.done = make(chan *op, nl+b.nt) // a lane or an agent has one completion out at most
	b.prime()
	b.start = time.Now()
	defer b.stop()

	var next core.Request
	var have, eof bool
	var last int64
	readNext := func() error {
		err := src.Next(&next)
		if err == io.EOF {
			eof = true
			return nil
		}
		if err != nil {
			return err
		}
		if next.Arrival < last || next.Arrival > core.MaxTime {
			return fmt.Errorf("live: request %d arrives at %d ns, before the one ahead of it or past the time limit", next.Seq, next.Arrival)
		}
		last = next.Arrival
		next.Blocks = append([]core.Block(nil), next.Blocks...)
		have = true
		minheap.Push(&b.tm, timer{t: next.Arrival, seq: b.seq(), kind: tArrival}, timerBefore)
		return nil
	}
	if err := readNext(); err != nil {
		return nil, err
	}
	var wait *time.Timer
	// lt is the time the core and the scheduler are told: a move's
	// completion at the clock's reading, a timer's event at its due time
	// (the GPU's steps run back to back as on the device, however late the
	// loop sees their ends), never going back.
	var lt int64
	at := func(t int64) int64 { lt = max(lt, t); return lt }
	completed := func(i *op) {
		n := at(b.now())
		b.complete(n, i)
		b.kick(n)
	}
	for {
		if b.stopped() {
			return nil, ErrStopped
		}
		// completions first: they free lanes and HBM
		for progressed := true; progressed; {
			progressed = false
			select {
			case i := <-b.done:
				completed(i)
				progressed = true
			default:
			}
		}
		for real := b.now(); len(b.tm) > 0 && b.tm[0].t <= real; {
			t := minheap.Pop(&b.tm, timerBefore)
			now := at(t.t)
			switch t.kind {
			case tArrival:
				b.res.ArrivalLag.Add(real - t.t)
				b.res.Lag[next.Seq] = real - t.t
				r := next
				have = false
				b.c.Arrive(now, &r)
				b.reportLost(now)
				if err := readNext(); err != nil {
					return nil, err
				}
			case tStep:
				b.res.StepLag.Add(real - t.t)
				b.sch.Done(now)
			case tWake:
				b.c.Wake(now, t.req)
			case tMoveDone:
				b.moveDone(now, t.op)
			}
			b.kick(now)
		}
		if eof && !have && len(b.tm) == 0 && b.inFl == 0 && !b.sch.Busy() {
			if b.c.Running() != 0 || b.c.Queued() != 0 {
				return nil, fmt.Errorf("live: %d requests running and %d queued with nothing left to happen", b.c.Running(), b.c.Queued())
			}
			break
		}
		if b.o.Virtual != nil {
			if len(b.tm) > 0 {
				b.vnow = max(b.vnow, b.tm[0].t)
			}
			continue
		}
		// Wait for the next timer or completion.
		if len(b.tm) == 0 {
			completed(<-b.done)
			continue
		}
		d := time.Duration(b.tm[0].t - b.now())
		if d <= 0 {
			continue
		}
		if d < spinBelow {
			// A timer wakes tens to hundreds of us late on a busy machine:
			// the last stretch is polled, yielding the CPU between looks.
			select {
			case i := <-b.done:
				completed(i)
			default:
				runtime.Gosched()
			}
			continue
		}
		d -= spinBelow / 2
		if wait == nil {
			wait = time.NewTimer(d)
		} else {
			wait.Reset(d)
		}
		select {
		case i := <-b.done:
			if !wait.Stop() {
				select {
				case <-wait.C:
				default:
				}
			}
			completed(i)
		case <-wait.C:
		}
	}
	b.res.WallNs = b.now()
	b.res.Stats = b.c.Stats
	return &b.res, nil
}

// stop ends the workers.
func (b *Body) stop() {
	for _, l := range b.links {
		if l != nil && l.work != nil {
			close(l.work)
			l.work = nil
		}
	}
	for _, a := range b.agents {
		if a.tasks != nil {
			close(a.tasks)
			a.tasks = nil
		}
	}
	b.wg.Wait()
}

// Finish flushes the stores that buffer writes and collects the links'
// figures; call once after Run.
func (b *Body) Finish() {
	for t, s := range b.raw {
		if f, ok := s.(store.Flusher); ok {
			if err := f.Flush(); err != nil && len(b.res.Errors) < 8 {
				b.res.Errors = append(b.res.Errors, fmt.Sprintf("tier %d: flush: %v", t, err))
			}
			b.drops(t)
		}
	}
	b.res.Links = b.res.Links[:0]
	for _, l := range b.links {
		if l != nil && l.used {
			b.res.Links = append(b.res.Links, &l.stat)
		}
	}
}

// VerifyStores reads back every block each store holds (block ids below
// blocks) and checks its payload.
func (b *Body) VerifyStores(blocks int) {
	for t, s := range b.stores {
		for blk := core.Block(0); int(blk) < blocks; blk++ {
			if !s.Has(blk) {
				continue
			}
			if b.stopped() {
				return
			}
			n := b.o.RealBytes(b.c.BlockBytes(blk))
			got, err := s.Get(blk, b.lbuf[:n])
			b.res.Checked++
			if errors.Is(err, store.ErrNotStored) {
				b.fail(blk, t, err)
				continue
			}
			if err != nil || got != n || !payload.Verify(b.lbuf[:n], blk) {
				b.res.Corrupt++
				if err == nil {
					err = errors.New("payload does not verify")
				}
				b.fail(blk, t, err)
			}
		}
	}
}

// Close releases the body's buffers (the stores belong to the caller).
func (b *Body) Close() error {
	b.stop()
	for _, a := range b.bufs {
		a.Close()
	}
	b.bufs = nil
	return b.larna.Close()
}
