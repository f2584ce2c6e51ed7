package hw

import (
	"fmt"
	"time"

	"kvsim/core"
)

// LinkStat is what really happened on one logical link (from->to tier).
type LinkStat struct {
	From, To  int
	Count     int64
	Bytes     int64
	BusyNs    int64
	Measured  core.Hist // ns per move
	Predicted core.Hist // ns per move, as the model predicts it
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
	Stores []Store // one per tier, tier 0 being HBM
	// RealBytes maps a block's model size to the bytes really moved
	// (replays scale blocks down so real traces fit the machine).
	RealBytes func(modelBytes int64) int
	MaxBytes  int  // largest RealBytes result
	Verify    bool // check every block read back
	// Predict, if set, gives the model's time for a move of n real bytes.
	Predict func(from, to int, n int64) int64
}

// Body is the real-hardware Mover: every Move reads the block from one
// store and writes it to another, timed; Prefill writes the payloads of the
// blocks a request computes into HBM. It is driven from one goroutine.
type Body struct {
	o       BodyOptions
	core    *core.Core
	buf     []byte
	arena   *Arena
	links   [][]*LinkStat
	lost    []LostCopy
	Checked int64
	Corrupt int64
	Errors  []string // first few I/O errors, for the report

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
	a, err := NewArena(o.MaxBytes)
	if err != nil {
		return nil, err
	}
	b := &Body{o: o, arena: a, buf: a.Slice(0, o.MaxBytes)}
	n := len(o.Stores)
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
	if len(b.Errors) < 8 {
		b.Errors = append(b.Errors, fmt.Sprintf("block %d, tier %d: %v", blk, tier, err))
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
		if req >= 0 && kind == core.Load {
			for int(req) >= len(b.loadNs) {
				b.loadNs = append(b.loadNs, 0)
			}
			b.loadNs[req] += d
		}
	}
	if err == nil && b.o.Verify {
		b.Checked++
		if !Verify(buf, blk) {
			b.Corrupt++
			err = fmt.Errorf("payload does not verify")
			b.o.Stores[to].Delete(blk)
		}
	}
	if err != nil {
		b.o.Stores[from].Delete(blk)
		b.fail(blk, from, err)
		if to == 0 { // the request recomputes it
			Fill(buf, blk)
			_ = b.o.Stores[0].Put(blk, buf)
		}
		return
	}
	if werr != nil {
		b.fail(blk, to, werr)
		return
	}
	if ev, ok := b.o.Stores[to].(interface{ Evicted() []int32 }); ok {
		for _, k := range ev.Evicted() {
			b.fail(k, to, fmt.Errorf("evicted by the store"))
		}
	}
	ls := b.links[from][to]
	if ls == nil {
		ls = &LinkStat{From: from, To: to}
		b.links[from][to] = ls
	}
	ls.Count++
	ls.Bytes += int64(n)
	ls.BusyNs += d
	ls.Measured.Add(d)
	if b.o.Predict != nil {
		ls.Predicted.Add(b.o.Predict(from, to, int64(n)))
	}
}

// Drop implements core.Mover.
func (b *Body) Drop(now int64, blk core.Block, tier int) { b.o.Stores[tier].Delete(blk) }

// Prefill implements core.Mover: the KV of every block of the request that
// HBM does not hold yet is "computed", i.e. its payload is written.
func (b *Body) Prefill(now int64, req core.ReqID, cached, compute int) {
	if b.own {
		defer func() { b.events = append(b.events, completion{kind: donePrefill, req: req}) }()
	}
	hbm := b.o.Stores[0]
	for _, blk := range b.core.Request(req).Blocks {
		if hbm.Has(blk) {
			continue
		}
		buf := b.buf[:b.o.RealBytes(b.core.BlockBytes(blk))]
		Fill(buf, blk)
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
// (the end-of-replay sweep of --verify).
func (b *Body) VerifyStores(blocks int) {
	for t, s := range b.o.Stores {
		for blk := core.Block(0); int(blk) < blocks; blk++ {
			if !s.Has(blk) {
				continue
			}
			n := b.o.RealBytes(b.core.BlockBytes(blk))
			got, err := s.Get(blk, b.buf[:n])
			b.Checked++
			if err != nil || got != n || !Verify(b.buf[:n], blk) {
				b.Corrupt++
				if err == nil {
					err = fmt.Errorf("payload does not verify")
				}
				b.fail(blk, t, err)
			}
		}
	}
}
