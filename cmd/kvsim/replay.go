package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"kvsim/core"
	"kvsim/hw"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/trace"
	"kvsim/workload"
)

// defaultReplayScenario is used without --scenario: the quickstart
// hierarchy (HBM, pinned host memory, DRAM, SSD) with LRU.
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

// replayFaults, set by tests, makes storage tiers fail I/O as planned.
var replayFaults *hw.FaultPlan

type replayOptions struct {
	real, verify, asJSON bool
	fresh, allowLoss     bool
	scenario, dir        string
	profile              string
	policy               string
	blockBytes, limit    int
	hugepages, hugeSize  string
	sequential           bool
	engine               string
	sets                 setFlags
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("replay", "kvsim replay --real [--scenario FILE] [--set KEY=VALUE]... [--dir DIR] [--fresh] [--block-bytes N] [--limit N] [--verify] [--allow-loss] [--json] [--profile FILE] [--sequential] TRACE", stderr)
	var o replayOptions
	fs.BoolVar(&o.real, "real", false, "move real bytes through real memory and storage (required)")
	fs.StringVar(&o.scenario, "scenario", "", "scenario `FILE` giving the hierarchy and policy (default: HBM, DRAM, SSD with LRU)")
	addSetFlag(fs, &o.sets)
	fs.StringVar(&o.dir, "dir", "kvsim-replay", "`DIR` for the storage tiers' stores (DIR/tier-NAME, kept across runs) and replay.json (not tmpfs)")
	fs.BoolVar(&o.fresh, "fresh", false, "start the storage tiers empty instead of reopening what an earlier replay left in DIR")
	fs.BoolVar(&o.allowLoss, "allow-loss", false, "exit 0 even if copies were lost to I/O errors (else exit 3)")
	fs.StringVar(&o.profile, "profile", "", "hardware profile `FILE` from kvsim calibrate: predict with this machine's links")
	fs.StringVar(&o.policy, "policy", "", "which [[policy]] of the scenario to replay (default: the first)")
	fs.IntVar(&o.blockBytes, "block-bytes", 64<<10, "real bytes of one full block (`N`); the model's blocks are scaled to it")
	fs.IntVar(&o.limit, "limit", 0, "replay at most `N` requests")
	fs.BoolVar(&o.verify, "verify", false, "check every block read back, and every block left in a tier at the end")
	fs.BoolVar(&o.asJSON, "json", false, "print replay.json to stdout")
	fs.BoolVar(&o.sequential, "sequential", false, "no simulator: the real body runs the core on its own clock, one request at a time")
	fs.StringVar(&o.hugepages, "hugepages", "try", "DRAM pool hugepages: off, try or require")
	fs.StringVar(&o.hugeSize, "hugepage-size", "2MB", "hugepage size: 2MB or 1GB")
	fs.StringVar(&o.engine, "engine", "auto", "SSD I/O: auto (io_uring, else pread/pwrite), io_uring or pread")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if !o.real {
		return badInputf("replay: --real is required (the simulator alone is 'kvsim run')")
	}
	if len(pos) != 1 {
		return badInputf("replay: want exactly one TRACE, got %d", len(pos))
	}
	if o.blockBytes < 4096 || o.blockBytes%4096 != 0 {
		return badInputf("replay: --block-bytes %d: must be a positive multiple of 4096 (direct I/O alignment)", o.blockBytes)
	}
	if o.limit < 0 {
		return badInputf("replay: --limit must be >= 0")
	}
	tracePath := pos[0]
	if _, err := os.Stat(tracePath); err != nil {
		return badInputf("replay: %v", err)
	}
	var sc *scenario.Scenario
	if o.scenario == "" {
		abs, _ := filepath.Abs(tracePath)
		sc, err = scenario.ParseWith([]byte(strings.Replace(defaultReplayScenario, "TRACE", filepath.ToSlash(abs), 1)), "replay-default.toml", o.sets)
	} else {
		sc, err = scenario.LoadWith(o.scenario, o.sets)
	}
	if err != nil {
		return badInput(err)
	}
	sc.Workload.Trace, sc.Workload.Gen = tracePath, nil
	if o.profile != "" {
		p, err := scenario.LoadProfile(o.profile)
		if err != nil {
			return badInput(err)
		}
		sc.ApplyProfile(p)
	}
	pi := 0
	if o.policy != "" {
		pi = -1
		for i, p := range sc.Policies {
			if p.Name == o.policy {
				pi = i
			}
		}
		if pi < 0 {
			return badInputf("replay: --policy %q: the scenario has no such [[policy]]", o.policy)
		}
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return badInputf("replay: --dir: %v", err)
	}
	if err := results.CheckReplayPath(filepath.Join(o.dir, "replay.json")); err != nil {
		return badInput(err)
	}
	rep, err := replay(ctx, sc, pi, o)
	if err != nil {
		return err
	}
	lost := lossError(rep, o.allowLoss)
	b, err := results.WriteReplay(filepath.Join(o.dir, "replay.json"), rep)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if o.asJSON {
		if _, err = stdout.Write(b); err != nil {
			return err
		}
		return lost
	}
	printReplay(stdout, rep, filepath.Join(o.dir, "replay.json"))
	return lost
}

// exitError carries its own exit status.
type exitError struct {
	msg  string
	code int
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

// lossError is the end of a replay that lost copies: exit status 3, or
// nil with allow.
func lossError(r *results.Replay, allow bool) error {
	var n int64
	for _, v := range r.Lost {
		n += v
	}
	if n == 0 || allow {
		return nil
	}
	first := ""
	if len(r.Errors) > 0 {
		first = " (first: " + r.Errors[0] + ")"
	}
	return &exitError{code: 3, msg: fmt.Sprintf("replay: %d copies lost to I/O errors or corruption%s; the link figures leave those moves out; --allow-loss accepts such a run", n, first)}
}

// storeIdentity is what the blocks of a storage tier depend on: the same
// block of the same trace gets the same key (dense ids in order of first
// appearance) and size only when all of it is the same. Nil without
// storage tiers.
func storeIdentity(sc *scenario.Scenario, o replayOptions) ([]hw.StoreField, error) {
	if !slices.ContainsFunc(sc.Tiers, func(t scenario.Tier) bool { return t.Kind == "ssd" || t.Kind == "nvmeof" }) {
		return nil, nil
	}
	f, err := os.Open(sc.Workload.Trace)
	if err != nil {
		return nil, badInputf("replay: %v", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, badInputf("replay: reading %s: %v", sc.Workload.Trace, err)
	}
	return []hw.StoreField{
		{Key: "--block-bytes", Value: strconv.Itoa(o.blockBytes)},
		{Key: "model bytes per token", Value: strconv.FormatInt(sc.Model.BytesPerToken(), 10)},
		{Key: "model block_tokens", Value: strconv.Itoa(sc.Model.BlockTokens)},
		{Key: "workload format", Value: sc.Workload.Format},
		{Key: "trace sha256", Value: hex.EncodeToString(h.Sum(nil))},
	}, nil
}

func tierNames(sc *scenario.Scenario) []string {
	var out []string
	for _, t := range sc.Tiers {
		out = append(out, t.Name)
	}
	return out
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

func replay(ctx context.Context, sc *scenario.Scenario, pi int, o replayOptions) (*results.Replay, error) {
	modelBlock := sc.Model.BytesPerBlock()
	scale := float64(o.blockBytes) / float64(modelBlock)
	realBytes := func(model int64) int {
		n := int(math.Ceil(float64(model) * scale))
		return max(16, (n+7)&^7)
	}
	var specs []hw.TierSpec
	for _, t := range sc.Tiers {
		specs = append(specs, hw.TierSpec{Name: t.Name, Kind: t.Kind, Capacity: int64(float64(t.Capacity) * scale)})
	}
	id, err := storeIdentity(sc, o)
	if err != nil {
		return nil, err
	}
	ss, err := hw.OpenStores(specs, hw.TierOptions{Dir: o.dir, SlotBytes: o.blockBytes,
		Hugepages: o.hugepages, HugepageSize: o.hugeSize, Engine: o.engine, QueueDepth: 32,
		Fresh: o.fresh, Identity: id, Faults: replayFaults})
	if err != nil {
		return nil, badInputf("replay: %v", err)
	}
	defer ss.Close()
	stores, notes := ss.List, ss.Notes
	pol := sc.Policies[pi]
	cfg := simConfig(sc, pol, nil)
	if needsFuture(pol.Eviction) {
		f, err := buildFuture(ctx, sc, traceOptions(sc, false, o.limit))
		if err != nil {
			return nil, wrapTrace(sc, err)
		}
		cfg = simConfig(sc, pol, f)
	}
	var s *sim.Sim
	body, err := hw.NewBody(hw.BodyOptions{Stores: stores, RealBytes: realBytes, MaxBytes: o.blockBytes, Verify: o.verify,
		Predict:    func(from, to int, n int64) int64 { return s.PredictNs(from, to, n) },
		ModelBytes: modelBytesOf(sc, realBytes), TierNames: tierNames(sc)})
	if err != nil {
		return nil, err
	}
	defer body.Close()
	if !o.sequential {
		cfg.Tee = body
	}
	s, err = sim.New(cfg, nil)
	if err != nil {
		return nil, badInputf("%s: %v", sc.Path, err)
	}
	rd, err := openTrace(ctx, sc, traceOptions(sc, false, o.limit))
	if err != nil {
		return nil, wrapTrace(sc, err)
	}
	defer rd.Close()
	src := workload.NewSource(rd, trace.NewDict())
	in := &ctxSource{ctx: ctx, src: src, prog: startProgress(nil, "", 0, false)}
	t0 := time.Now()
	var stats core.Stats
	if o.sequential {
		// No simulator: the body runs its own core on the real clock (s
		// only predicts: link times, and loads vs recompute on idle links).
		cc := cfg.Core
		cc.Cost = s
		c, err := body.RunSequential(cc, in, nil)
		if err != nil {
			return nil, wrapTrace(sc, err)
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
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil, err
			}
			return nil, wrapTrace(sc, err)
		}
		stats = res.Stats
	}
	body.Finish()
	if o.verify {
		body.VerifyStores(src.Distinct())
	}
	rep := &results.Replay{Scenario: sc.Name, Trace: sc.Workload.Trace, Policy: pol.Name, Requests: src.Requests,
		BlockBytes: o.blockBytes, Scale: scale, Backends: map[string]string{}, Notes: notes,
		Links: map[string]results.ReplayLink{}, Hits: map[string]int64{}, Evictions: map[string]int64{}, Lost: map[string]int64{},
		StoreEvict: map[string]int64{}, Misses: stats.Misses, Errors: body.Errors, WallSeconds: time.Since(t0).Seconds(), Sequential: o.sequential}
	for i, t := range sc.Tiers {
		rep.Backends[t.Name] = stores[i].Backend()
		rep.Hits[t.Name] = stats.Hits[i]
		rep.Evictions[t.Name] = stats.Evictions[i]
		rep.Lost[t.Name] = body.Lost[i]
		rep.StoreEvict[t.Name] = body.StoreEvicted[i]
	}
	for _, op := range ss.Opened {
		if rep.Stores == nil {
			rep.Stores = map[string]results.ReplayStore{}
		}
		i := slices.IndexFunc(sc.Tiers, func(t scenario.Tier) bool { return t.Name == op.Tier })
		w := body.Warmed[i]
		rep.Stores[op.Tier] = results.ReplayStore{Dir: op.Dir, State: op.State, Buckets: op.Buckets, Blocks: op.Blocks, Discarded: op.Discarded, WarmBlocks: w.Placed, DroppedBlocks: w.Dropped}
	}
	if o.verify {
		rep.Verify = &results.ReplayVerify{Checked: body.Checked, Corrupt: body.Corrupt}
	}
	for _, l := range body.Links() {
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
	return rep, nil
}

func printReplay(w io.Writer, r *results.Replay, path string) {
	mode := "in the simulator's order"
	if r.Sequential {
		mode = "one at a time on the real clock"
	}
	fmt.Fprintf(w, "replay of scenario %s, policy %s: %d requests %s, blocks scaled to %d bytes (x%.3g)\n", r.Scenario, r.Policy, r.Requests, mode, r.BlockBytes, r.Scale)
	for _, t := range sortedKeys(r.Backends) {
		fmt.Fprintf(w, "  tier %-12s %s\n", t, r.Backends[t])
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, t := range sortedKeys(r.Stores) {
		st := r.Stores[t]
		switch st.State {
		case "reopened":
			fmt.Fprintf(w, "  store %s: reopened %s: %d blocks in %d buckets recovered, %d placed in the tier, %d dropped (no room, or a size no block has)\n",
				t, st.Dir, st.Blocks, st.Buckets, st.WarmBlocks, st.DroppedBlocks)
		case "emptied":
			fmt.Fprintf(w, "  store %s: emptied %s: %d blocks in %d buckets deleted\n", t, st.Dir, st.Blocks, st.Buckets)
		default:
			fmt.Fprintf(w, "  store %s: new, in %s\n", t, st.Dir)
		}
		for _, d := range st.Discarded {
			fmt.Fprintf(w, "  store %s: discarded on open: %s\n", t, d)
		}
	}
	width := 12
	for k := range r.Links {
		width = max(width, len(k))
	}
	fmt.Fprintf(w, "  %-*s %8s %7s %10s %9s %9s %8s %13s %9s\n", width, "link", "moves", "failed", "MiB", "p50 us", "p99 us", "GB/s", "predicted p50", "rel err")
	for _, k := range sortedKeys(r.Links) {
		l := r.Links[k]
		fmt.Fprintf(w, "  %-*s %8d %7d %10.1f %9.1f %9.1f %8.2f %13.1f %8.0f%%\n", width, k, l.Count, l.Failed, float64(l.Bytes)/(1<<20), l.P50us, l.P99us, l.GBps, l.PredictedP50us, 100*l.RelError)
	}
	var lost []string
	for _, t := range sortedKeys(r.Lost) {
		if r.Lost[t] > 0 {
			lost = append(lost, fmt.Sprintf("%s %d", t, r.Lost[t]))
		}
	}
	if len(lost) > 0 {
		fmt.Fprintf(w, "  LOST copies (I/O errors, corruption; not in the figures above): %s\n", strings.Join(lost, ", "))
		if len(r.Errors) > 0 {
			fmt.Fprintf(w, "  first error: %s\n", r.Errors[0])
		}
	}
	for _, t := range sortedKeys(r.StoreEvict) {
		if n := r.StoreEvict[t]; n > 0 {
			fmt.Fprintf(w, "  store %s: %d blocks evicted by the store itself to stay within its capacity\n", t, n)
		}
	}
	if r.Verify != nil {
		fmt.Fprintf(w, "  verify: %d checked, %d corrupt\n", r.Verify.Checked, r.Verify.Corrupt)
	}
	fmt.Fprintf(w, "  wrote %s\n", path)
}
