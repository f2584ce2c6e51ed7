package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
name = "replay"
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

// ReplayLink is one entry of replay.json's links.
type ReplayLink struct {
	Count          int64   `json:"count"`
	Bytes          int64   `json:"bytes"`
	P50us          float64 `json:"p50_us"`
	P99us          float64 `json:"p99_us"`
	GBps           float64 `json:"gbps"`
	PredictedP50us float64 `json:"predicted_p50_us"`
	RelError       float64 `json:"rel_error"`
}

// Replay is replay.json.
type Replay struct {
	Scenario   string                `json:"scenario"`
	Trace      string                `json:"trace"`
	Policy     string                `json:"policy"`
	Requests   int64                 `json:"requests"`
	BlockBytes int                   `json:"block_bytes"`
	Scale      float64               `json:"scale"`
	Backends   map[string]string     `json:"backends"`
	Notes      []string              `json:"notes,omitempty"`
	Links      map[string]ReplayLink `json:"links"`
	Verify     struct {
		Checked int64 `json:"checked"`
		Corrupt int64 `json:"corrupt"`
	} `json:"verify"`
	Hits        map[string]int64 `json:"hits"`
	Misses      int64            `json:"misses"`
	Evictions   map[string]int64 `json:"evictions"`
	Lost        map[string]int64 `json:"lost"`
	Errors      []string         `json:"errors,omitempty"`
	Sequential  bool             `json:"sequential"` // own real clock, one request at a time, no simulator
	WallSeconds float64          `json:"wall_seconds"`
}

type replayOptions struct {
	real, verify, asJSON bool
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
	fs := newFlags("replay", "kvsim replay --real [--scenario FILE] [--set KEY=VALUE]... [--dir DIR] [--block-bytes N] [--limit N] [--verify] [--json] [--profile FILE] [--sequential] TRACE", stderr)
	var o replayOptions
	fs.BoolVar(&o.real, "real", false, "move real bytes through real memory and storage (required)")
	fs.StringVar(&o.scenario, "scenario", "", "scenario `FILE` giving the hierarchy and policy (default: HBM, DRAM, SSD with LRU)")
	addSetFlag(fs, &o.sets)
	fs.StringVar(&o.dir, "dir", "kvsim-replay", "`DIR` for the SSD tier's files and replay.json (not tmpfs)")
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
	rep, err := replay(ctx, sc, pi, o)
	if err != nil {
		return err
	}
	b, err := results.MarshalJSON(rep)
	if err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(o.dir, "replay.json"), b); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if o.asJSON {
		_, err = stdout.Write(b)
		return err
	}
	printReplay(stdout, rep, filepath.Join(o.dir, "replay.json"))
	return nil
}

func replay(ctx context.Context, sc *scenario.Scenario, pi int, o replayOptions) (*Replay, error) {
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
	ss, err := hw.OpenStores(specs, hw.TierOptions{Dir: o.dir, SlotBytes: o.blockBytes,
		Hugepages: o.hugepages, HugepageSize: o.hugeSize, Engine: o.engine, QueueDepth: 32})
	if err != nil {
		return nil, badInputf("replay: %v", err)
	}
	defer ss.Close()
	stores, notes := ss.List, ss.Notes
	pol := sc.Policies[pi]
	cfg := simConfig(sc, pol, nil)
	if needsFuture(pol.Eviction) {
		f, err := buildFuture(sc, traceOptions(sc, false, o.limit))
		if err != nil {
			return nil, wrapTrace(sc, err)
		}
		cfg = simConfig(sc, pol, f)
	}
	var s *sim.Sim
	body, err := hw.NewBody(hw.BodyOptions{Stores: stores, RealBytes: realBytes, MaxBytes: o.blockBytes, Verify: o.verify,
		Predict: func(from, to int, n int64) int64 { return s.PredictNs(from, to, n) }})
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
	rd, err := openTrace(sc, traceOptions(sc, false, o.limit))
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
	if o.verify {
		body.VerifyStores(src.Distinct())
	}
	rep := &Replay{Scenario: sc.Name, Trace: sc.Workload.Trace, Policy: pol.Name, Requests: src.Requests,
		BlockBytes: o.blockBytes, Scale: scale, Backends: map[string]string{}, Notes: notes,
		Links: map[string]ReplayLink{}, Hits: map[string]int64{}, Evictions: map[string]int64{}, Lost: map[string]int64{},
		Misses: stats.Misses, Errors: body.Errors, WallSeconds: time.Since(t0).Seconds(), Sequential: o.sequential}
	for i, t := range sc.Tiers {
		rep.Backends[t.Name] = stores[i].Backend()
		rep.Hits[t.Name] = stats.Hits[i]
		rep.Evictions[t.Name] = stats.Evictions[i]
		rep.Lost[t.Name] = stats.Lost[i]
	}
	rep.Verify.Checked, rep.Verify.Corrupt = body.Checked, body.Corrupt
	for _, l := range body.Links() {
		rl := ReplayLink{Count: l.Count, Bytes: l.Bytes, P50us: float64(l.Measured.Quantile(0.5)) / 1e3,
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

func printReplay(w io.Writer, r *Replay, path string) {
	mode := "in the simulator's order"
	if r.Sequential {
		mode = "one at a time on the real clock"
	}
	fmt.Fprintf(w, "replay %s (%s): %d requests %s, blocks scaled to %d bytes (x%.3g)\n", r.Scenario, r.Policy, r.Requests, mode, r.BlockBytes, r.Scale)
	for _, t := range sortedKeys(r.Backends) {
		fmt.Fprintf(w, "  tier %-12s %s\n", t, r.Backends[t])
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	width := 12
	for k := range r.Links {
		width = max(width, len(k))
	}
	fmt.Fprintf(w, "  %-*s %8s %10s %9s %9s %8s %13s %9s\n", width, "link", "moves", "MiB", "p50 us", "p99 us", "GB/s", "predicted p50", "rel err")
	for _, k := range sortedKeys(r.Links) {
		l := r.Links[k]
		fmt.Fprintf(w, "  %-*s %8d %10.1f %9.1f %9.1f %8.2f %13.1f %8.0f%%\n", width, k, l.Count, float64(l.Bytes)/(1<<20), l.P50us, l.P99us, l.GBps, l.PredictedP50us, 100*l.RelError)
	}
	fmt.Fprintf(w, "  verify: %d checked, %d corrupt; wrote %s\n", r.Verify.Checked, r.Verify.Corrupt, path)
}
