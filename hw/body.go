package hw

import (
	"errors"
	"fmt"
	"time"

	"kvsim/core"
	"kvsim/hw/ioengine"
	"kvsim/hw/payload"
	"kvsim/hw/store"
)

// LinkStat is what really happened on one logical link (from->to tier).
// Count, Bytes, BusyNs and the histograms are of moves whose copy was
// kept; a move whose read or write failed, or whose copy a storage tier
// lost later (a bucket write that failed), is counted in Failed only.
type LinkStat struct {
	From, To  int
	Count     int64
	Bytes     int64
	BusyNs    int64
	Failed    int64
	Measured  core.Hist // ns per move
	Predicted core.Hist // ns per move, as the model predicts it
}

// pendingMove is a move into a store that may still lose the copy (a
// bucket store buffers it until the bucket is sealed): it enters its
// link's figures at Finish, unless the copy was lost meanwhile.
type pendingMove struct {
	blk      core.Block
	from, to uint8
	failed   bool
	n        int64
	d, pred  int64
}

// LostCopy is a copy the body could not keep; the driver passes it to
// core.Lost after the current event.
type LostCopy struct {
	Block core.Block
	Tier  int
	Err   error
}

// BodyOptions configure a real body.
type BodyOptions struct {
	Stores []store.Store // one per tier, tier 0 being HBM
	// RealBytes maps a block's model size to the bytes really moved
	// (replays scale blocks down so real traces fit the machine).
	RealBytes func(modelBytes int64) int
	MaxBytes  int  // largest RealBytes result
	Verify    bool // check every block read back
	// Predict, if set, gives the model's time for a move of n real bytes.
	Predict func(from, to int, n int64) int64
	// ModelBytes inverts RealBytes for blocks a store kept from an earlier
	// run (see Warm); ok is false for a size RealBytes cannot give, or
	// gives for more than one model size.
	ModelBytes func(realBytes int) (modelBytes int64, ok bool)
	// TierNames, if set, name the tiers in Errors (else their index).
	TierNames []string
	// Stopped, if set and true, abandons the run (an interrupt): the body
	// moves, deletes and checks nothing more, so that its driver reaches its next
	// check at once; every store stays as its last operation left it.
	// Called before every move, so it must be cheap (an atomic load).
	Stopped func() bool
}

// Warmed is what Warm did with one tier's recovered blocks.
type Warmed struct {
	Placed  int // now resident in the core's tier
	Dropped int // deleted from the store: wrong size, or no room in the tier
}

// Body is the real-hardware Mover: every Move reads the block from one
// store and writes it to another, timed; Prefill writes the payloads of the
// blocks a request computes into HBM. It is driven from one goroutine.
type Body struct {
	o       BodyOptions
	core    *core.Core
	buf     []byte
	arena   *ioengine.Arena
	links   [][]*LinkStat
	lost    []LostCopy
	Checked int64
	Corrupt int64
	Errors  []string // first few I/O errors, for the report
	// Per tier: copies lost (failed writes and reads, corrupt payloads),
	// and blocks a store evicted on its own to stay within its capacity.
	Lost         []int64
	StoreEvicted []int64
	Warmed       []Warmed
	Preemptions  int64 // requests the core preempted (see Preempted)

	pending  []pendingMove
	lastPend [][]int32 // per tier, per block: index+1 in pending of its last move there
	maxBlock core.Block

	// With its own clock (RunSequential), the body reports completions.
	own    bool
	events []completion
	loadNs []int64 // per request: time spent on its loads
}

type completionKind uint8

const (
	donePrefill completionKind = iota
	doneDecode
	doneMove
	doneWake
	doneDrain // a move out of HBM has left it (Core.Drained)
)

type completion struct {
	kind completionKind
	req  core.ReqID
	blk  core.Block
}

// NewBody builds a body over its stores. Call SetCore before the first command.
func NewBody(o BodyOptions) (*Body, error) {
	if len(o.Stores) == 0 || o.RealBytes == nil || o.MaxBytes <= 0 {
		return nil, fmt.Errorf("hw: body needs stores and a block size")
	}
	a, err := ioengine.NewArena(o.MaxBytes)
	if err != nil {
		return nil, err
	}
	n := len(o.Stores)
	b := &Body{o: o, arena: a, buf: a.Slice(0, o.MaxBytes), Lost: make([]int64, n), StoreEvicted: make([]int64, n),
		Warmed: make([]Warmed, n), lastPend: make([][]int32, n), maxBlock: -1}
	b.links = make([][]*LinkStat, n)
	for i := range b.links {
		b.links[i] = make([]*LinkStat, n)
	}
	return b, nil
}

// SetCore gives the body the core whose commands it executes (it reads
// request blocks and block sizes from it).
func (b *Body) SetCore(c *core.Core) { b.core = c }

// Close releases the buffer (the stores belong to the caller).
func (b *Body) Close() error { return b.arena.Close() }

func (b *Body) fail(blk core.Block, tier int, err error) {
	b.lost = append(b.lost, LostCopy{Block: blk, Tier: tier, Err: err})
	b.Lost[tier]++
	if len(b.Errors) < 8 {
		b.Errors = append(b.Errors, fmt.Sprintf("block %d, tier %s: %v", blk, b.tierName(tier), err))
	}
}

func (b *Body) tierName(t int) string {
	if t < len(b.o.TierNames) {
		return b.o.TierNames[t]
	}
	return fmt.Sprint(t)
}

// storeEvicted tells the core a store dropped b to stay within its
// capacity: not a loss of data, but the copy is gone all the same.
func (b *Body) storeEvicted(blk core.Block, tier int) {
	b.lost = append(b.lost, LostCopy{Block: blk, Tier: tier, Err: errStoreEvicted})
	b.StoreEvicted[tier]++
}

var errStoreEvicted = fmt.Errorf("evicted by the store")

// errNotArrived: a move's source copy was gone, so its destination copy,
// which the core counted on, never came to be. Not a loss of its own.
var errNotArrived = fmt.Errorf("its source copy was gone")

// goneByStore reports whether store t dropped blk on its own since the
// core last heard of its drops (TakeLost), or blk's copy there never
// arrived for that reason (the first hop of a multi-hop load): the core
// chose this move before it could know, so finding nothing is a miss, not
// a loss.
func (b *Body) goneByStore(blk core.Block, t int) bool {
	for _, l := range b.lost {
		if l.Block == blk && l.Tier == t && (l.Err == errStoreEvicted || l.Err == errNotArrived) {
			return true
		}
	}
	return false
}

// drops collects the blocks store t dropped on its own (store.Dropper)
// or found lost (store.LossReporter).
func (b *Body) drops(t int) {
	if s, ok := b.o.Stores[t].(store.Dropper); ok {
		ev, failed := s.Dropped()
		for _, k := range ev {
			b.storeEvicted(k, t)
		}
		for _, k := range failed {
			// The move that put k there did not keep its copy after all.
			if lp := b.lastPend[t]; int(k) < len(lp) && lp[k] != 0 {
				b.pending[lp[k]-1].failed = true
			}
			b.settle(k, t)
			b.fail(k, t, fmt.Errorf("lost with a bucket whose write failed"))
		}
	}
	if s, ok := b.o.Stores[t].(store.LossReporter); ok {
		for _, k := range s.Lost() {
			b.fail(k, t, fmt.Errorf("dropped by the store"))
		}
	}
}

// settle forgets which pending move put blk in tier: its copy is gone
// (deleted, or lost and already accounted).
func (b *Body) settle(blk core.Block, tier int) {
	if lp := b.lastPend[tier]; int(blk) < len(lp) {
		lp[blk] = 0
	}
}

func (b *Body) link(from, to int) *LinkStat {
	ls := b.links[from][to]
	if ls == nil {
		ls = &LinkStat{From: from, To: to}
		b.links[from][to] = ls
	}
	return ls
}

func (ls *LinkStat) add(n, d, pred int64, predicted bool) {
	ls.Count++
	ls.Bytes += n
	ls.BusyNs += d
	ls.Measured.Add(d)
	if predicted {
		ls.Predicted.Add(pred)
	}
}

// TakeLost returns and forgets the copies lost since the last call.
func (b *Body) TakeLost() []LostCopy {
	l := b.lost
	b.lost = b.lost[:0:0]
	return l
}

// Move implements core.Mover.
func (b *Body) Move(now int64, req core.ReqID, blk core.Block, bytes int64, from, to int, kind core.MoveKind) {
	if b.stopped() {
		return
	}
	n := b.o.RealBytes(bytes)
	buf := b.buf[:n]
	t0 := time.Now()
	got, err := b.o.Stores[from].Get(blk, buf)
	if err == nil && got != n {
		err = fmt.Errorf("read %d bytes, want %d", got, n)
	}
	var werr error
	if err == nil {
		werr = b.o.Stores[to].Put(blk, buf)
	}
	d := time.Since(t0).Nanoseconds() // the transfer only, not the checking
	if b.own {
		if kind == core.PrefetchMove {
			defer func() { b.events = append(b.events, completion{kind: doneMove, req: req, blk: blk}) }()
		}
		if from == 0 { // moves are carried out one at a time: out of HBM on return
			defer func() { b.events = append(b.events, completion{kind: doneDrain, blk: blk}) }()
		}
		if req >= 0 && kind == core.Load {
			for int(req) >= len(b.loadNs) {
				b.loadNs = append(b.loadNs, 0)
			}
			b.loadNs[req] += d
		}
	}
	if err == nil && b.o.Verify {
		b.Checked++
		if !payload.Verify(buf, blk) {
			b.Corrupt++
			err = fmt.Errorf("payload does not verify")
			b.o.Stores[to].Delete(blk)
		}
	}
	if err != nil {
		// A block the store evicted earlier in this event is counted in
		// its StoreEvicted already, and no move took place.
		if !b.goneByStore(blk, from) {
			b.link(from, to).Failed++
			b.o.Stores[from].Delete(blk)
			b.fail(blk, from, err)
		}
		b.settle(blk, from)
		if to == 0 { // the request recomputes it
			payload.Fill(buf, blk)
			_ = b.o.Stores[0].Put(blk, buf)
		} else {
			b.lost = append(b.lost, LostCopy{Block: blk, Tier: to, Err: errNotArrived})
		}
		return
	}
	if werr != nil {
		b.link(from, to).Failed++
		b.fail(blk, to, werr) // the errno first: the drops are its consequence
		b.drops(to)
		return
	}
	var pred int64
	if b.o.Predict != nil {
		pred = b.o.Predict(from, to, int64(n))
	}
	if _, later := b.o.Stores[to].(store.Dropper); later {
		// The copy may still be lost: settle at Finish.
		lp := b.lastPend[to]
		if int(blk) >= len(lp) {
			lp = append(lp, make([]int32, max(int(blk)+1, 2*len(lp))-len(lp))...)
			b.lastPend[to] = lp
		}
		b.pending = append(b.pending, pendingMove{blk: blk, from: uint8(from), to: uint8(to), n: int64(n), d: d, pred: pred})
		lp[blk] = int32(len(b.pending))
		b.drops(to)
		return
	}
	b.drops(to)
	b.link(from, to).add(int64(n), d, pred, b.o.Predict != nil)
}

// stopped reports whether the run is abandoned (BodyOptions.Stopped).
func (b *Body) stopped() bool { return b.o.Stopped != nil && b.o.Stopped() }

// Finish flushes the stores that buffer writes, reports the copies a
// failed flush lost, and settles the moves into them: kept copies enter
// their link's figures, lost ones count as failed. Call it once, after the
// last command and before Links and VerifyStores.
func (b *Body) Finish() {
	for t, s := range b.o.Stores {
		if f, ok := s.(store.Flusher); ok {
			if err := f.Flush(); err != nil && len(b.Errors) < 8 {
				b.Errors = append(b.Errors, fmt.Sprintf("tier %s: flush: %v", b.tierName(t), err))
			}
			b.drops(t)
		}
	}
	for _, p := range b.pending {
		ls := b.link(int(p.from), int(p.to))
		if p.failed {
			ls.Failed++
			continue
		}
		ls.add(p.n, p.d, p.pred, b.o.Predict != nil)
	}
	b.pending = nil
	for t := range b.lastPend {
		b.lastPend[t] = nil
	}
}

// Warm places the blocks the stores kept from an earlier run in c's tiers
// before the first request (core.Preload), in block order: a reopened SSD
// tier starts as full as it was left. A block whose size no model block
// has, or that does not fit in what is left of its tier, is deleted from
// the store. Needs BodyOptions.ModelBytes; does nothing without it.
func (b *Body) Warm(c *core.Core) {
	if b.o.ModelBytes == nil {
		return
	}
	for t, s := range b.o.Stores {
		r, ok := s.(store.Recoverer)
		if !ok || t == 0 {
			continue
		}
		keys, sizes := r.Blocks()
		for i, k := range keys {
			m, ok := b.o.ModelBytes(sizes[i])
			if ok && k >= 0 && c.Preload(t, k, m) {
				b.Warmed[t].Placed++
				b.maxBlock = max(b.maxBlock, k)
				continue
			}
			s.Delete(k)
			b.Warmed[t].Dropped++
		}
	}
}

// Drop implements core.Mover.
func (b *Body) Drop(now int64, blk core.Block, tier int) {
	if b.stopped() {
		return
	}
	b.o.Stores[tier].Delete(blk)
	b.settle(blk, tier)
}

// Prefill implements core.Mover: the KV of every block of the request that
// HBM does not hold yet is "computed", i.e. its payload is written.
func (b *Body) Prefill(now int64, req core.ReqID, cached, compute int) {
	if b.stopped() {
		return
	}
	if b.own {
		defer func() { b.events = append(b.events, completion{kind: donePrefill, req: req}) }()
	}
	hbm := b.o.Stores[0]
	for _, blk := range b.core.Request(req).Blocks {
		if hbm.Has(blk) {
			continue
		}
		buf := b.buf[:b.o.RealBytes(b.core.BlockBytes(blk))]
		payload.Fill(buf, blk)
		if err := hbm.Put(blk, buf); err != nil {
			b.fail(blk, 0, err)
		}
	}
}

// Decode implements core.Mover (generated tokens are not materialised).
func (b *Body) Decode(_ int64, req core.ReqID, _ int) {
	if b.own {
		b.events = append(b.events, completion{kind: doneDecode, req: req})
	}
}

// Wake implements core.Mover.
func (b *Body) Wake(_ int64, req core.ReqID) {
	if b.own {
		b.events = append(b.events, completion{kind: doneWake, req: req})
	}
}

// Preempted implements core.Mover. The body only counts it: its HBM store
// holds prompt blocks only (generated tokens are not materialised), and in
// its sequential mode decoding is instantaneous and one request runs at a
// time, so the core never needs to preempt there; as the simulator's tee
// it follows the simulator's decisions, whose Prefill it is sent again.
func (b *Body) Preempted(_ int64, _ core.ReqID) { b.Preemptions++ }

// Links returns the links that carried traffic, in (from, to) order.
func (b *Body) Links() []*LinkStat {
	var out []*LinkStat
	for _, row := range b.links {
		for _, l := range row {
			if l != nil {
				out = append(out, l)
			}
		}
	}
	return out
}

// VerifyStores reads back every block each store holds and checks it
// (the end-of-replay sweep of --verify). It ends early, the sweep
// incomplete, once the run is abandoned (BodyOptions.Stopped).
func (b *Body) VerifyStores(blocks int) {
	blocks = max(blocks, int(b.maxBlock)+1) // recovered blocks the trace did not reach
	for t, s := range b.o.Stores {
		for blk := core.Block(0); int(blk) < blocks; blk++ {
			if !s.Has(blk) {
				continue
			}
			if b.stopped() {
				return
			}
			n := b.o.RealBytes(b.core.BlockBytes(blk))
			got, err := s.Get(blk, b.buf[:n])
			b.Checked++
			if errors.Is(err, store.ErrNotStored) {
				// Gone from a store that can lose keys on its own (a
				// remote server's eviction): lost, but nothing was corrupt.
				b.fail(blk, t, err)
				continue
			}
			if err != nil || got != n || !payload.Verify(b.buf[:n], blk) {
				b.Corrupt++
				if err == nil {
					err = fmt.Errorf("payload does not verify")
				}
				b.fail(blk, t, err)
			}
		}
	}
}
