package live

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"kvsim/core"
	"kvsim/core/sched"
	"kvsim/hw/hostmem"
	"kvsim/hw/payload"
	"kvsim/hw/store"
	"kvsim/internal/coretest"
	"kvsim/internal/minheap"
	"kvsim/policy"
)

// flat times a step: 1000 ns plus 10 ns per prefill token.
type flat struct{}

func (flat) StepNs(b *sched.StepBatch) float64 { return 1000 + 10*float64(b.PrefillTokens) }

func memStore() *hostmem.MemStore {
	return hostmem.NewMemStore("test", 4096, 4, func(n int) (hostmem.Chunk, error) { return hostmem.Chunk{Mem: make([]byte, n)}, nil })
}

// tiny is HBM and DRAM, 4-token blocks of 1000 bytes a token.
func tiny(hbmBlocks int) core.Config {
	return core.Config{
		Tiers:         []core.Tier{{Name: "hbm", Capacity: int64(hbmBlocks) * 4000}, {Name: "dram", Capacity: 1 << 30}},
		BytesPerToken: 1000, BlockTokens: 4,
		NewPolicy: func(_ int, c int64) (policy.Policy, error) {
			return policy.New("lru", policy.Config{Capacity: c})
		},
	}
}

func newBody(t *testing.T, cfg core.Config, lanes int, moveNs int64, verify bool) (*Body, []store.Store) {
	t.Helper()
	stores := []store.Store{memStore(), memStore()}
	b, err := New(cfg, Options{Stores: stores, RealBytes: func(m int64) int { return int(m) }, MaxBytes: 4096, Verify: verify,
		Lanes: [][]int{{0, lanes}, {lanes, 0}}, Step: flat{}, Budget: 64, TierNames: []string{"hbm", "dram"},
		Virtual: func(int, int, int64) int64 { return moveNs }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, stores
}

// preload puts blocks in DRAM, in the store and in the core.
func preload(t *testing.T, b *Body, s store.Store, blocks ...core.Block) {
	t.Helper()
	buf := make([]byte, 4000)
	for _, k := range blocks {
		payload.Fill(buf, k)
		if err := s.Put(k, buf); err != nil {
			t.Fatal(err)
		}
		if !b.Core().Preload(1, k, 4000) {
			t.Fatalf("preload of block %d refused", k)
		}
	}
}

// TestLiveByHand: one request of 9 tokens (blocks 0 and 1 full, in DRAM;
// block 2 one token) and 2 output tokens, moves of 500 ns. With one lane
// the loads land at 500 and 1000; the prefill of the one uncached token
// is a step of 1000 + 10 = 1010 ns from 1000, so the first token comes at
// 2010 and the second after a decode step of 1000, at 3010. With two
// lanes both loads land at 500: 1510 and 2510.
func TestLiveByHand(t *testing.T) {
	for _, c := range []struct {
		lanes                 int
		wait, ttft, done, ldn int64
	}{{1, 1000, 2010, 3010, 1000}, {2, 500, 1510, 2510, 500}} {
		b, stores := newBody(t, tiny(8), c.lanes, 500, true)
		preload(t, b, stores[1], 0, 1)
		res, err := b.Run(&coretest.Slice{Reqs: []core.Request{{Seq: 0, InputTokens: 9, OutputTokens: 2, Blocks: []core.Block{0, 1, 2}}}})
		if err != nil {
			t.Fatal(err)
		}
		b.Finish()
		if len(res.Records) != 1 {
			t.Fatalf("lanes %d: %d records", c.lanes, len(res.Records))
		}
		r := res.Records[0]
		if r.LoadWaitNs != c.wait || r.TTFT() != c.ttft || r.Done != c.done || r.LoadNs != c.ldn || r.HitBlocks[1] != 2 {
			t.Errorf("lanes %d: load wait %d, TTFT %d, done %d, load %d, DRAM hits %d; want %d, %d, %d, %d, 2",
				c.lanes, r.LoadWaitNs, r.TTFT(), r.Done, r.LoadNs, r.HitBlocks[1], c.wait, c.ttft, c.done, c.ldn)
		}
		if res.Steps != 2 || res.BusyNs != 2010 {
			t.Errorf("lanes %d: %d steps, %d ns busy; want 2 steps, 2010 ns", c.lanes, res.Steps, res.BusyNs)
		}
		for k := core.Block(0); k < 3; k++ {
			if !stores[0].Has(k) {
				t.Errorf("lanes %d: block %d not in HBM", c.lanes, k)
			}
		}
		if l := res.Links; len(l) != 1 || l[0].From != 1 || l[0].To != 0 || l[0].Count != 2 || l[0].Bytes != 8000 {
			t.Errorf("lanes %d: links %+v; want dram->hbm 2 moves of 4000 bytes", c.lanes, l)
		}
	}
}

// run replays random conversations through a body with a tight HBM and
// returns its records, one line each, and the body.
func run(t *testing.T, seed uint64, lanes int) (string, *Body, []store.Store, *Result) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	cfg := tiny(12 + rng.IntN(20))
	cfg.HoldEvicted = seed%2 == 0
	b, stores := newBody(t, cfg, lanes, int64(100+rng.IntN(3000)), true)
	reqs := coretest.Conversations(rng, 60)
	res, err := b.Run(&coretest.Slice{Reqs: reqs})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	b.Finish()
	var out strings.Builder
	for _, r := range res.Records {
		fmt.Fprintf(&out, "%d %d %d %d %d %v %d\n", r.Seq, r.Admitted, r.FirstToken, r.Done, r.LoadWaitNs, r.HitBlocks, r.Preemptions)
	}
	if len(res.Records) != len(reqs) {
		t.Errorf("seed %d: %d of %d requests finished", seed, len(res.Records), len(reqs))
	}
	return out.String(), b, stores, res
}

// TestLiveInvariants: on random runs with a tight HBM (evictions,
// demotions, loads, held HBM on even seeds), every request finishes, no
// copy is lost or corrupt, every block a tier of the core holds is in its
// store and reads back right, the core's accounting holds, and a second
// run makes the same decisions at the same times.
func TestLiveInvariants(t *testing.T) {
	var loads int64
	for seed := range uint64(16) {
		lanes := 1 + int(seed%3)
		first, b, stores, res := run(t, seed, lanes)
		if err := b.Core().Check(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for tier, n := range res.Lost {
			if n != 0 || res.Corrupt != 0 {
				t.Errorf("seed %d: tier %d lost %d copies, %d corrupt (%v)", seed, tier, n, res.Corrupt, res.Errors)
			}
		}
		for tier, s := range stores {
			for blk := core.Block(0); blk < 400; blk++ {
				if !b.Core().Resident(blk, tier) {
					continue
				}
				buf := make([]byte, 4096)
				n, err := s.Get(blk, buf)
				if err != nil || !payload.Verify(buf[:n], blk) {
					t.Errorf("seed %d: tier %d holds block %d in the core, store: %v", seed, tier, blk, err)
				}
			}
		}
		for _, l := range res.Links {
			if l.From == 1 {
				loads += l.Count
			}
		}
		if again, _, _, _ := run(t, seed, lanes); again != first {
			t.Errorf("seed %d: a second run differs", seed)
		}
	}
	if loads == 0 {
		t.Error("no load from DRAM in any run: the test exercises nothing")
	}
}

// TestDeleteWaitsForRead: a copy the core drops while a move reads it is
// deleted only once the read is done, and a write after the delete lands
// after it.
func TestDeleteWaitsForRead(t *testing.T) {
	b, stores := newBody(t, tiny(8), 1, 500, true)
	buf := make([]byte, 4000)
	payload.Fill(buf, 7)
	if err := stores[1].Put(7, buf); err != nil {
		t.Fatal(err)
	}
	b.done = make(chan *op, 4)
	b.Move(0, core.Background, 7, 4000, 1, 0, core.Demote) // read of (7, dram): started at once
	b.Drop(0, 7, 1)
	b.Move(0, core.Background, 7, 4000, 0, 1, core.Demote) // write of (7, dram) after the delete
	if !stores[1].Has(7) {
		t.Fatal("the drop ran while the read was in flight")
	}
	tm := minheap.Pop(&b.tm, timerBefore) // the first move's completion
	b.moveDone(tm.t, tm.op)
	if got := len(b.tm); got != 1 {
		t.Fatalf("%d moves in flight after the first; want the third started", got)
	}
	tm = minheap.Pop(&b.tm, timerBefore)
	b.moveDone(tm.t, tm.op)
	if !stores[1].Has(7) || !stores[0].Has(7) {
		t.Fatal("block 7 should be in both tiers: read, deleted, written back")
	}
	if len(b.keys) != 0 {
		t.Errorf("%d keys still have operations", len(b.keys))
	}
}

// flaky is a memory store whose writes fail with ENOSPC after the first
// okPuts, and which forgets every lose-th block it stored behind the
// body's back (Get then reports it not stored, as a server's eviction).
type flaky struct {
	*hostmem.MemStore
	okPuts, puts, lose int
	gone               []int32
}

var _ store.LossReporter = (*flaky)(nil)

// Lost implements store.LossReporter.
func (f *flaky) Lost() []int32 {
	g := f.gone
	f.gone = nil
	return g
}

func (f *flaky) Put(b int32, d []byte) error {
	if f.puts++; f.puts > f.okPuts {
		return syscall.ENOSPC
	}
	if err := f.MemStore.Put(b, d); err != nil {
		return err
	}
	if f.lose > 0 && f.puts%f.lose == 0 {
		f.MemStore.Delete(b)
		f.gone = append(f.gone, b)
	}
	return nil
}

// TestLiveFaults: a third tier whose disk fills up and which loses blocks
// behind the body's back. Every request still finishes, the failed writes
// and lost blocks are counted, the core forgets those copies (it never
// holds a block in a tier whose store does not), and nothing read back is
// corrupt.
func TestLiveFaults(t *testing.T) {
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 5))
		cfg := tiny(10 + rng.IntN(10))
		cfg.Tiers[1].Capacity = int64(20+rng.IntN(20)) * 4000
		cfg.Tiers = append(cfg.Tiers, core.Tier{Name: "disk", Capacity: 1 << 30})
		disk := &flaky{MemStore: memStore(), okPuts: 20 + rng.IntN(40), lose: 3}
		stores := []store.Store{memStore(), memStore(), disk}
		b, err := New(cfg, Options{Stores: stores, RealBytes: func(m int64) int { return int(m) }, MaxBytes: 4096, Verify: true,
			Lanes: [][]int{{0, 2, 1}, {2, 0, 2}, {1, 2, 0}}, Step: flat{}, Budget: 32,
			Virtual: func(f, to int, _ int64) int64 { return int64(300 * (1 + f + to)) }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs := coretest.Conversations(rng, 80)
		res, err := b.Run(&coretest.Slice{Reqs: reqs})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		b.Finish()
		if len(res.Records) != len(reqs) {
			t.Errorf("seed %d: %d of %d finished", seed, len(res.Records), len(reqs))
		}
		if res.Lost[2] == 0 || res.Corrupt != 0 {
			t.Errorf("seed %d: disk lost %d copies, %d corrupt; want some lost, none corrupt", seed, res.Lost[2], res.Corrupt)
		}
		for blk := core.Block(0); blk < 500; blk++ {
			if b.Core().Resident(blk, 2) && !disk.Has(blk) {
				t.Errorf("seed %d: the core holds block %d on the disk, which lost it", seed, blk)
			}
		}
		if err := b.Core().Check(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		b.Close()
	}
}

// TestLiveWallClock runs random conversations on the wall clock: moves
// on worker goroutines, deletes and drop polls on the tiers' agents,
// completions in whatever order the machine gives. Whatever the timing,
// every request finishes, nothing is lost or corrupt, and every block
// the core holds in a tier is in that tier's store and reads back right.
func TestLiveWallClock(t *testing.T) {
	var moves int64
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 9))
		cfg := tiny(12 + rng.IntN(20))
		cfg.HoldEvicted = seed%2 == 0
		stores := []store.Store{memStore(), memStore()}
		b, err := New(cfg, Options{Stores: stores, RealBytes: func(m int64) int { return int(m) }, MaxBytes: 4096, Verify: true,
			Lanes: [][]int{{0, 2}, {2, 0}}, Step: flat{}, Budget: 64}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reqs := coretest.Conversations(rng, 60)
		res, err := b.Run(&coretest.Slice{Reqs: reqs})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		b.Finish()
		if len(res.Records) != len(reqs) || res.Corrupt != 0 || res.Lost[0]+res.Lost[1] != 0 {
			t.Errorf("seed %d: %d of %d finished, %d corrupt, lost %v (%v)", seed, len(res.Records), len(reqs), res.Corrupt, res.Lost, res.Errors)
		}
		for tier, s := range stores {
			for blk := core.Block(0); blk < 400; blk++ {
				if !b.Core().Resident(blk, tier) {
					continue
				}
				buf := make([]byte, 4096)
				if n, err := s.Get(blk, buf); err != nil || !payload.Verify(buf[:n], blk) {
					t.Errorf("seed %d: tier %d holds block %d in the core, store: %v", seed, tier, blk, err)
				}
			}
		}
		if err := b.Core().Check(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, l := range res.Links {
			moves += l.Count
		}
		b.Close()
	}
	if moves == 0 {
		t.Error("no move in any run: the test exercises no worker")
	}
}
