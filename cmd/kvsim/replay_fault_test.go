package main

import (
	"testing"

	"kvsim/experiment"
	"kvsim/hw"
	"kvsim/hw/bucket"
	"kvsim/hw/ioengine"
	"kvsim/hw/store"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// faultyDisk adapts a bucket store whose engine fails writes to store.Store.
type faultyDisk struct{ s *bucket.Store }

func (d faultyDisk) Backend() string                    { return "faulty" }
func (d faultyDisk) Put(k int32, b []byte) error        { return d.s.Put(uint64(k), b) }
func (d faultyDisk) Get(k int32, b []byte) (int, error) { return d.s.Get(uint64(k), b) }
func (d faultyDisk) Delete(k int32)                     { d.s.Delete(uint64(k)) }
func (d faultyDisk) Has(k int32) bool                   { return d.s.Has(uint64(k)) }
func (d faultyDisk) Close() error                       { return d.s.Close() }

var _ store.LossReporter = faultyDisk{}

func (d faultyDisk) Lost() []int32 {
	var out []int32
	for _, k := range d.s.Evicted() {
		out = append(out, int32(k))
	}
	return out
}

// TestReplayDiskFull: the SSD tier's disk fills up (ENOSPC from the second
// megabyte on, injected under the bucket store). The replay finishes, the
// core forgets every copy that could not be written, and no block read
// back anywhere is corrupt.
func TestReplayDiskFull(t *testing.T) {
	sc, err := scenario.Load("../../scenarios/hbm_dram_ssd.toml")
	if err != nil {
		t.Fatal(err)
	}
	const blockBytes = 16384
	scale := float64(blockBytes) / float64(sc.Model.BytesPerBlock())
	mem := func(kind string) store.Store {
		ss, err := hw.OpenStores([]hw.TierSpec{{Name: kind, Kind: kind}}, hw.TierOptions{SlotBytes: blockBytes, Hugepages: "off", Device: "emulated"})
		if err != nil {
			t.Fatal(err)
		}
		return ss.List[0]
	}
	o := bucket.DefaultStoreOptions(replayDir(t))
	o.Engine = bucket.NewFaultEngine(ioengine.NewPreadEngine(), bucket.FaultPlan{FailAfter: 1 << 20, Sticky: true})
	o.BucketBytes, o.WriteBuffer = 256<<10, 256<<10
	bs, _, err := bucket.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	stores := []store.Store{mem("hbm"), mem("dram"), faultyDisk{bs}}
	defer func() {
		for _, s := range stores {
			s.Close()
		}
	}()
	body, err := hw.NewBody(hw.BodyOptions{Stores: stores, MaxBytes: blockBytes, Verify: true,
		RealBytes: func(n int64) int { return max(16, (int(float64(n)*scale)+7)&^7) }})
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	cfg := experiment.SimConfig(sc, sc.Policies[0], nil)
	cfg.Tee = body
	s, err := sim.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	body.SetCore(s.Core())
	s.OnEvent(func(s *sim.Sim) {
		for _, l := range body.TakeLost() {
			s.Core().Lost(s.Now(), l.Block, l.Tier)
		}
		if err := s.Core().Check(); err != nil {
			t.Fatal(err)
		}
	})
	rd, err := trace.Open("../../traces/synthetic.jsonl", trace.Options{Limit: 800})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	src := workload.NewSource(rd, trace.NewDict())
	res, err := s.Run(src)
	if err != nil {
		t.Fatal(err)
	}
	body.VerifyStores(src.Distinct())
	if res.Stats.Lost[2] == 0 {
		t.Error("the full disk should have cost the SSD tier some copies")
	}
	if body.Corrupt != 0 || body.Checked == 0 {
		t.Errorf("verify: %d checked, %d corrupt", body.Checked, body.Corrupt)
	}
	if res.Stats.Requests != 800 {
		t.Errorf("%d requests finished", res.Stats.Requests)
	}
	t.Logf("lost %v, %d checked; first errors: %v", res.Stats.Lost, body.Checked, body.Errors[:min(2, len(body.Errors))])
}
