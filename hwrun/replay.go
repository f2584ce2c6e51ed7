package hwrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/hw"
	"kvsim/hw/bucket"
	"kvsim/hw/live"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/tierkind"
	"kvsim/trace"
)

// ReplayOptions say how Replay drives the real body.
type ReplayOptions struct {
	Dir          string // the storage tiers' stores live in Dir/tier-NAME, kept across runs
	BlockBytes   int    // real bytes of one full block; the model's blocks are scaled to it
	Limit        int    // replay at most this many requests (0: all)
	Verify       bool   // check every block read back, and every block left at the end
	Fresh        bool   // start the storage tiers empty instead of reopening them
	Sequential   bool   // no simulator: the body runs the core on the real clock, one request at a time
	Mirror       bool   // the simulator runs the core; the body copies its moves one at a time
	Hugepages    string // DRAM pool hugepages: off, try or require
	HugepageSize string // 2MB or 1GB
	Engine       string // SSD I/O: auto, io_uring or pread
	// Faults, if set, makes storage tiers fail I/O as planned (tests).
	Faults *bucket.FaultPlan
	// BeforeEnd, if set, runs after the last request, before the stores'
	// end-of-run checks and cleanup (tests: a server that stalls there).
	BeforeEnd func()
	// Left, if set, hears of each remote tier's keys left on its server
	// when the stores close, whether the replay ends or fails (the report
	// of a replay that ends has them too).
	Left func(results.ReplayLeft)
	// Progress, if set, hears of every request read.
	Progress experiment.Progress
}

// storeIdentity is what the blocks of a storage tier depend on: the same
// block of the same trace gets the same key (dense ids in order of first
// appearance) and size only when all of it is the same. Nil without
// storage tiers.
func storeIdentity(ctx context.Context, sc *scenario.Scenario, o ReplayOptions) ([]hw.StoreField, error) {
	if !slices.ContainsFunc(sc.Tiers, func(t scenario.Tier) bool { k, _ := tierkind.Lookup(t.Kind); return k.OnDisk }) {
		return nil, nil
	}
	f, err := trace.OpenFile(sc.Workload.Trace)
	if err != nil {
		return nil, experiment.BadInputf("replay: %v", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, trace.ContextReader(ctx, f)); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, experiment.BadInputf("replay: reading %s: %v", sc.Workload.Trace, err)
	}
	id := []hw.StoreField{
		{Key: "--block-bytes", Value: strconv.Itoa(o.BlockBytes)},
		{Key: "model bytes per token", Value: strconv.FormatInt(sc.Model.BytesPerToken(), 10)},
		{Key: "model block_tokens", Value: strconv.Itoa(sc.Model.BlockTokens)},
		{Key: "workload format", Value: sc.Workload.Format},
		{Key: "trace sha256", Value: hex.EncodeToString(h.Sum(nil))},
	}
	// Injected ids are drawn from the table and the seed: other draws give
	// a dense id another block. Absent without injection, so that stores
	// written before it was recorded still reopen.
	if in := sc.Workload.Inject; in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		id = append(id, hw.StoreField{Key: "workload.inject", Value: string(b)},
			hw.StoreField{Key: "seed", Value: strconv.FormatInt(sc.Seed, 10)})
	}
	return id, nil
}

// leftOnServer is what ss's remote stores left on their servers.
func leftOnServer(ss *hw.Stores) []results.ReplayLeft {
	var out []results.ReplayLeft
	for _, l := range ss.Left {
		out = append(out, results.ReplayLeft{Tier: l.Tier, Server: l.Server, Keys: l.Keys, Pattern: l.Pattern, Remove: l.Remove, Why: l.Err})
	}
	return out
}

// scaleBytes is model bytes n at real/model bytes a block, exactly (a
// float product can fall a byte short, and a store sized from it a slot).
func scaleBytes(n int64, real int, model int64) int64 {
	if n <= 0 || real <= 0 || model <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), uint64(real))
	if hi >= uint64(model) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(model))
	return int64(min(q, math.MaxInt64))
}

// modelBytesOf inverts realBytes over the sizes a block can have (1 to
// block_tokens tokens); a real size two model sizes share is not inverted.
func modelBytesOf(sc *scenario.Scenario, realBytes func(int64) int) func(int) (int64, bool) {
	m := map[int]int64{}
	for tok := 1; tok <= sc.Model.BlockTokens; tok++ {
		mb := int64(tok) * sc.Model.BytesPerToken()
		r := realBytes(mb)
		if _, dup := m[r]; dup {
			m[r] = -1
			continue
		}
		m[r] = mb
	}
	return func(n int) (int64, bool) {
		mb, ok := m[n]
		return mb, ok && mb > 0
	}
}

// Replay replays sc's policy sc.Policies[pi] over its trace on real memory
// and storage (the hw body): in the simulator's order, or, with
// Sequential, one request at a time on the real clock. Errors are as Run's;
// copies lost to I/O errors are not an error here (see CheckLoss).
//
// Once ctx is cancelled the replay stops at its next move or request and
// returns ctx's error; its stores are closed as after a complete run (a
// bucket store seals what it buffered), so the next replay reopens them.
func Replay(ctx context.Context, sc *scenario.Scenario, pi int, o ReplayOptions) (*results.Replay, error) {
	release, err := experiment.SpoolScenarios(ctx, sc) // read more than once: a piped trace is copied
	if err != nil {
		return nil, err
	}
	defer release()
	modelBlock := sc.Model.BytesPerBlock()
	scale := float64(o.BlockBytes) / float64(modelBlock)
	realBytes := func(model int64) int {
		n := int(math.Ceil(float64(model) * scale))
		return max(16, (n+7)&^7)
	}
	isLive := !o.Mirror && !o.Sequential
	var specs []hw.TierSpec
	slack := make([]int64, len(sc.Tiers))
	for i, t := range sc.Tiers {
		lanes := 1 // a remote store's connections: its links' lanes
		for _, l := range sc.Links {
			if l.From == i || l.To == i {
				lanes = max(lanes, l.Lanes)
			}
		}
		capacity := scaleBytes(t.Capacity, o.BlockBytes, modelBlock)
		if isLive && capacity < math.MaxInt64/2 {
			// Room beyond the tier's capacity for copies whose delete waits
			// for a read in flight (the core holds the tier to its capacity).
			slack[i] = capacity/4 + 64*int64(o.BlockBytes)
			capacity += slack[i]
		}
		specs = append(specs, hw.TierSpec{Name: t.Name, Kind: t.Kind, Capacity: capacity, Endpoint: t.Endpoint, Lanes: lanes, Device: t.Device})
	}
	id, err := storeIdentity(ctx, sc, o)
	if err != nil {
		return nil, err
	}
	ss, err := hw.OpenStores(specs, hw.TierOptions{Dir: o.Dir, SlotBytes: o.BlockBytes,
		Hugepages: o.Hugepages, HugepageSize: o.HugepageSize, Engine: o.Engine, QueueDepth: 32,
		Fresh: o.Fresh, Identity: id, Faults: o.Faults})
	if err != nil {
		return nil, experiment.BadInputf("replay: %v", err)
	}
	defer func() {
		ss.Close()
		if o.Left != nil {
			for _, l := range leftOnServer(ss) {
				o.Left(l)
			}
		}
	}()
	stores := ss.List
	pol := sc.Policies[pi]
	cfg := experiment.SimConfig(sc, pol, nil)
	if pol.Offline() {
		f, err := experiment.BuildFuture(ctx, sc, experiment.TraceOptions(sc, false, o.Limit))
		if err != nil {
			return nil, experiment.TraceError(sc, err)
		}
		cfg = experiment.SimConfig(sc, pol, f)
	}
	for i, st := range stores {
		// A store of fixed slots holds a slot per block, a short one too:
		// the core must not hold more blocks there than it has slots.
		if sl, ok := st.(interface{ Slots() int }); ok && i > 0 {
			cfg.Core.Tiers[i].MaxBlocks = max(sl.Slots()-int(slack[i]/int64(o.BlockBytes)), 1)
		}
	}
	var s *sim.Sim
	body, err := hw.NewBody(hw.BodyOptions{Stores: stores, RealBytes: realBytes, MaxBytes: o.BlockBytes, Verify: o.Verify,
		Predict:    func(from, to int, n int64) int64 { return s.PredictNs(from, to, n) },
		ModelBytes: modelBytesOf(sc, realBytes), TierNames: experiment.TierNames(sc),
		Stopped: func() bool { return ctx.Err() != nil }})
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if o.Mirror {
		cfg.Tee = body
	}
	s, err = sim.New(cfg, nil)
	if err != nil {
		return nil, experiment.BadInputf("%s: %v", sc.Path, err)
	}
	topt := experiment.TraceOptions(sc, false, o.Limit)
	rd, err := experiment.OpenTrace(ctx, sc, topt)
	if err != nil {
		return nil, experiment.TraceError(sc, err)
	}
	defer rd.Close()
	src, err := experiment.RequestSource(sc, rd, topt)
	if err != nil {
		return nil, err
	}
	in := experiment.Interruptible(ctx, src, o.Progress)
	t0 := time.Now()
	var stats core.Stats
	var lr *live.Result
	var lb *live.Body
	var pr *prediction
	if isLive {
		if pr, err = o.predictLive(ctx, sc, cfg, scale); err != nil {
			return nil, err
		}
		cc := cfg.Core
		cc.Cost = s
		lb, err = live.New(cc, live.Options{Stores: stores, RealBytes: realBytes, MaxBytes: o.BlockBytes, ModelBytes: modelBytesOf(sc, realBytes),
			Verify: o.Verify, Lanes: liveLanes(sc), Step: cfg.GPU.StepModel(), Budget: cfg.GPU.MaxBatchedTokens,
			Predict:   func(from, to int, n int64) int64 { return s.PredictNs(from, to, n) },
			TierNames: experiment.TierNames(sc), Stopped: func() bool { return ctx.Err() != nil }}, nil)
		if err != nil {
			return nil, experiment.BadInputf("%s: %v", sc.Path, err)
		}
		defer lb.Close()
		lr, err = lb.Run(in)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if errors.Is(err, live.ErrSessions) {
			return nil, experiment.BadInputf("replay: %s: %v", sc.Path, err)
		}
		if err != nil {
			return nil, experiment.TraceError(sc, err)
		}
		stats = lr.Stats
	} else if o.Sequential {
		// No simulator: the body runs its own core on the real clock (s
		// only predicts: link times, and loads vs recompute on idle links).
		cc := cfg.Core
		cc.Cost = s
		c, err := body.RunSequential(cc, in, nil)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err != nil {
			return nil, experiment.TraceError(sc, err)
		}
		stats = c.Stats
	} else {
		body.SetCore(s.Core())
		body.Warm(s.Core())
		s.OnEvent(func(s *sim.Sim) {
			for _, l := range body.TakeLost() {
				s.Core().Lost(s.Now(), l.Block, l.Tier)
			}
		})
		res, err := s.Run(in)
		if err := ctx.Err(); err != nil { // also in the events after the last arrival
			return nil, err
		}
		if err != nil {
			return nil, experiment.TraceError(sc, err)
		}
		stats = res.Stats
	}
	if o.BeforeEnd != nil {
		o.BeforeEnd()
	}
	if isLive {
		lb.Finish()
		if o.Verify {
			lb.VerifyStores(src.Distinct())
		}
	} else {
		body.Finish()
		if o.Verify {
			body.VerifyStores(src.Distinct())
		}
	}
	if err := ctx.Err(); err != nil { // the sweep of --verify ended early
		return nil, err
	}
	backends := map[string]string{}
	for i, t := range sc.Tiers {
		backends[t.Name] = stores[i].Backend()
	}
	// Closed here, not deferred: what a remote store could not delete
	// goes into the report.
	ss.Close()
	rep := &results.Replay{Scenario: sc.Name, Trace: sc.Workload.Trace, Policy: pol.Name, Requests: src.Requests,
		BlockBytes: o.BlockBytes, Scale: scale, Backends: backends, Notes: ss.Notes,
		Links: map[string]results.ReplayLink{}, Hits: map[string]int64{}, Evictions: map[string]int64{}, Lost: map[string]int64{},
		StoreEvict: map[string]int64{}, Misses: stats.Misses, Errors: body.Errors, WallSeconds: time.Since(t0).Seconds(), Sequential: o.Sequential, Mode: "mirror"}
	if o.Sequential {
		rep.Mode = "sequential"
	}
	if isLive {
		rep.Mode, rep.Errors = "live", lr.Errors
	}
	rep.LeftOnServer = leftOnServer(ss)
	for i, t := range sc.Tiers {
		rep.Hits[t.Name] = stats.Hits[i]
		rep.Evictions[t.Name] = stats.Evictions[i]
		rep.Lost[t.Name] = body.Lost[i]
		rep.StoreEvict[t.Name] = body.StoreEvicted[i]
		if isLive {
			rep.Lost[t.Name], rep.StoreEvict[t.Name] = lr.Lost[i], lr.StoreEvicted[i]
		}
	}
	for _, op := range ss.Opened {
		if rep.Stores == nil {
			rep.Stores = map[string]results.ReplayStore{}
		}
		i := slices.IndexFunc(sc.Tiers, func(t scenario.Tier) bool { return t.Name == op.Tier })
		w := body.Warmed[i]
		if isLive {
			w = hw.Warmed{Placed: lr.Warmed[i]}
		}
		rep.Stores[op.Tier] = results.ReplayStore{Dir: op.Dir, State: op.State, Buckets: op.Buckets, Blocks: op.Blocks, Discarded: op.Discarded, WarmBlocks: w.Placed, DroppedBlocks: w.Dropped}
	}
	if o.Verify {
		rep.Verify = &results.ReplayVerify{Checked: body.Checked, Corrupt: body.Corrupt}
		if isLive {
			rep.Verify = &results.ReplayVerify{Checked: lr.Checked, Corrupt: lr.Corrupt}
		}
	}
	links := body.Links()
	if isLive {
		links = nil
		for _, l := range lr.Links {
			links = append(links, &hw.LinkStat{From: l.From, To: l.To, Count: l.Count, Bytes: l.Bytes, BusyNs: l.BusyNs, Failed: l.Failed,
				Measured: l.Measured, Predicted: l.Predicted})
		}
	}
	for _, l := range links {
		rl := results.ReplayLink{Count: l.Count, Failed: l.Failed, Bytes: l.Bytes, P50us: float64(l.Measured.Quantile(0.5)) / 1e3,
			P99us: float64(l.Measured.Quantile(0.99)) / 1e3, PredictedP50us: float64(l.Predicted.Quantile(0.5)) / 1e3}
		if l.BusyNs > 0 {
			rl.GBps = float64(l.Bytes) / float64(l.BusyNs)
		}
		if rl.P50us > 0 {
			rl.RelError = math.Abs(rl.PredictedP50us-rl.P50us) / rl.P50us
		}
		rep.Links[sc.Tiers[l.From].Name+"->"+sc.Tiers[l.To].Name] = rl
	}
	if isLive {
		if err := o.finishLive(sc, pi, cfg, pr, rep, lr); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// defaultReplayScenario is replay's hierarchy when none is given: HBM,
// DRAM and SSD with LRU.
const defaultReplayScenario = `
name = "default"
[model]
layers = 32
kv_heads = 8
head_dim = 128
dtype = "bf16"
[gpu]
prefill_tokens_per_s = 100000
decode_tokens_per_s = 100
[[tier]]
name = "hbm"
kind = "hbm"
capacity = "40GiB"
[[tier]]
name = "dram"
kind = "dram"
capacity = "256GiB"
[[tier]]
name = "ssd"
kind = "ssd"
capacity = "2TB"
[[link]]
from = "hbm"
to = "dram"
bandwidth = "25GB/s"
latency = "10us"
[[link]]
from = "dram"
to = "ssd"
bandwidth = "7GB/s"
latency = "10us"
[workload]
trace = "TRACE"
[[policy]]
eviction = "lru"
`

// DefaultReplayScenario is the scenario kvsim replay uses without one:
// defaultReplayScenario over the trace at tracePath, with --set overrides.
func DefaultReplayScenario(tracePath string, sets []string) (*scenario.Scenario, error) {
	abs, err := filepath.Abs(tracePath)
	if err != nil {
		return nil, err
	}
	return scenario.ParseWith([]byte(strings.Replace(defaultReplayScenario, "TRACE", filepath.ToSlash(abs), 1)), "replay-default.toml", sets)
}
