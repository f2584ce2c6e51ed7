// Package results owns every file kvsim writes or reads besides scenarios
// and traces: summary.json, requests.csv, replay.json and the hardware
// profile, each with one writer and one reader, so that writers, the
// report renderer and other programs agree on them.
package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"

	"kvsim/internal/atomicfile"
)

// Summary is summary.json.
type Summary struct {
	Scenario    string       `json:"scenario"`
	RunID       string       `json:"run_id,omitempty"` // hash of the inputs; requests.csv and report.html carry it too
	Description string       `json:"description"`
	Overrides   []string     `json:"overrides,omitempty"` // --set KEY=VALUE, as given
	Seed        int64        `json:"seed"`
	Model       Model        `json:"model"`
	Tiers       []Tier       `json:"tiers"`
	CostUSD     float64      `json:"hierarchy_cost_usd"` // sum of capacity x cost_per_gb
	Trace       Trace        `json:"trace"`
	Policies    []Policy     `json:"policies"`
	Run         Run          `json:"run"`
	Series      []TimeSeries `json:"series,omitempty"`
	Sweep       *SweepPoint  `json:"sweep,omitempty"` // set by kvsim sweep
	SLO         *SLO         `json:"slo,omitempty"`   // the scenario's [slo]; nil without one
}

// SLO is the latency targets a policy's slo_attainment is measured
// against; 0 is a target not set (only the other one counts).
type SLO struct {
	TTFTms float64 `json:"ttft_ms,omitempty"`
	TPOTms float64 `json:"tpot_ms,omitempty"`
}

// SweepPoint places a summary in a kvsim sweep: the value it gave the key.
type SweepPoint struct {
	Key   string `json:"key"`   // e.g. "workload.speedup", "tier.dram.capacity"
	Value string `json:"value"` // as given on the command line
}

// Model is the KV arithmetic the run used.
type Model struct {
	Layers        int    `json:"layers"`
	KVHeads       int    `json:"kv_heads"`
	HeadDim       int    `json:"head_dim"`
	DType         string `json:"dtype"`
	BlockTokens   int    `json:"block_tokens"`
	BytesPerToken int64  `json:"bytes_per_token"`
	BytesPerBlock int64  `json:"bytes_per_block"`
}

// Tier is one level of the hierarchy.
type Tier struct {
	Name          string  `json:"name"`
	Kind          string  `json:"kind"`
	CapacityBytes int64   `json:"capacity_bytes"`
	Bandwidth     float64 `json:"bandwidth_bytes_per_s"`
	LatencyNs     int64   `json:"latency_ns"`
	CostPerGB     float64 `json:"cost_per_gb"`
	CostUSD       float64 `json:"cost_usd"`
	// Scope is "cluster" for a tier pooled by a cluster's instances (its
	// capacity then each node's share); omitted for a node's own tier.
	Scope string `json:"scope,omitempty"`
}

// Trace describes the workload as read.
type Trace struct {
	Path           string  `json:"path"`
	Requests       int64   `json:"requests"`
	BlockAccesses  int64   `json:"block_accesses"`
	DistinctBlocks int64   `json:"distinct_blocks"`
	InputTokens    int64   `json:"input_tokens"`
	DurationS      float64 `json:"duration_s"` // after speedup
	Speedup        float64 `json:"speedup"`    // arrival times were divided by it
	SkippedLines   int     `json:"skipped_lines"`
	FirstSkipped   string  `json:"first_skipped,omitempty"` // the first skipped line's error, FILE:LINE: reason
	// Inject is the scenario's [workload.inject]: the block ids were
	// given by that prefix model (seeded by the scenario's seed), not
	// read from the trace. Absent when the trace's own ids were used.
	Inject           *Inject `json:"inject,omitempty"`
	InjectedRequests int64   `json:"injected_requests,omitempty"` // requests given ids by Inject
}

// Inject is [workload.inject] as run (kvsim/workload.Inject, which
// documents the model).
type Inject struct {
	Replace         bool    `json:"replace" key:"replace"`
	SystemTokens    int     `json:"system_tokens" key:"system_tokens"`
	Tenants         int     `json:"tenants" key:"tenants"`
	TenantTokens    int     `json:"tenant_tokens" key:"tenant_tokens"`
	TenantZipf      float64 `json:"tenant_zipf" key:"tenant_zipf"`
	SessionContinue float64 `json:"session_continue" key:"session_continue"`
	Sessions        int     `json:"sessions" key:"sessions"`
	SessionGap      int     `json:"session_gap" key:"session_gap"`
}

// Quantiles of a latency distribution, in milliseconds. A Policy holds a
// nil *Quantiles (null in summary.json) when no request completed: there
// is no distribution, and 0 would read as an instant answer.
type Quantiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Link is one direction of a link after a run.
type Link struct {
	Bytes       int64   `json:"bytes"`
	Transfers   int64   `json:"transfers"`
	Utilization float64 `json:"utilization"` // share of simulated time the link moved bytes
}

// Policy is one [[policy]] entry's outcome.
type Policy struct {
	Name             string           `json:"name"`
	Eviction         string           `json:"eviction"`
	Requests         int64            `json:"requests"`
	Rejected         int64            `json:"rejected"`
	BlockAccesses    int64            `json:"block_accesses"`
	Hits             map[string]int64 `json:"hits"`
	Misses           int64            `json:"misses"`
	HitRatio         float64          `json:"hit_ratio"`
	BlockHitRatio    float64          `json:"block_hit_ratio"`
	RecomputedTokens int64            `json:"recomputed_tokens"`
	TTFTms           *Quantiles       `json:"ttft_ms"`  // nil: no request completed
	QueueMs          *Quantiles       `json:"queue_ms"` // nil: no request completed
	// TPOTms is over requests with 2 or more output tokens: nil when none
	// completed (or in summaries of older kvsims, as the others below).
	TPOTms           *Quantiles `json:"tpot_ms"`
	E2Ems            *Quantiles `json:"e2e_ms"`              // arrival to last token; nil: no request completed
	LoadWaitMs       *Quantiles `json:"load_wait_ms"`        // prefill issued to loads landed; nil: no request completed
	OutputTokensPerS float64    `json:"output_tokens_per_s"` // output tokens of finished requests / simulated seconds
	Preemptions      int64      `json:"preemptions"`
	// SLOAttainment is the share of requests (rejected ones as misses)
	// meeting the scenario's SLO; nil without an [slo].
	SLOAttainment    *float64         `json:"slo_attainment"`
	DepWaits         int64            `json:"dependency_waits"`
	RecomputeCuts    int64            `json:"recompute_cuts"` // requests that recomputed cached blocks because loading them was slower
	BytesMoved       map[string]int64 `json:"bytes_moved"`
	BytesByPurpose   map[string]int64 `json:"bytes_moved_by_purpose"` // load, demote, write_through, prefetch
	Links            map[string]Link  `json:"links"`
	SharedTiers      map[string]Link  `json:"shared_tiers,omitempty"` // tiers with shared_bandwidth: their one pipe
	Evictions        map[string]int64 `json:"evictions"`
	Demotions        map[string]int64 `json:"demotions"`
	Promotions       map[string]int64 `json:"promotions"`
	Drops            map[string]int64 `json:"drops"`
	PeakUsedBytes    map[string]int64 `json:"peak_used_bytes"`
	SimulatedSeconds float64          `json:"simulated_seconds"`
	// Instances and Router: runs with [cluster] only.
	Instances []Instance `json:"instances,omitempty"`
	Router    *Router    `json:"router,omitempty"`
	Routing   *Routing   `json:"routing,omitempty"`
	// Sessions: closed-loop runs whose requests follow others only.
	Sessions *Sessions `json:"sessions,omitempty"`
	// NICs is each node's NIC traffic: clusters whose nodes exchange KV
	// (a pooled tier, disaggregation) only.
	NICs []NIC `json:"nics,omitempty"`
	// Pool is the cluster-scoped tier's state: runs with one only.
	Pool *Pool `json:"pool,omitempty"`
	// Ledger is the endurance and cost ledger (ledger.go).
	Ledger *Ledger `json:"ledger,omitempty"`
}

// NIC is one node's network interface after a cluster run.
type NIC struct {
	Node      int   `json:"node"`
	SendBytes int64 `json:"send_bytes"`
	RecvBytes int64 `json:"recv_bytes"`
	// Busy shares: the share of the run's simulated time (the policy's
	// simulated_seconds) each direction moved bytes.
	SendBusyShare float64 `json:"send_busy_share"`
	RecvBusyShare float64 `json:"recv_busy_share"`
}

// Pool is a tier pooled by a cluster's nodes, after the run.
type Pool struct {
	Tier          string  `json:"tier"`
	CapacityBytes int64   `json:"capacity_bytes"`  // every node's share
	ShareBytes    int64   `json:"share_bytes"`     // one node's
	PeakUsedBytes int64   `json:"peak_used_bytes"` // most resident at once
	UsedBytes     int64   `json:"used_bytes"`      // at the end
	NodeUsedBytes []int64 `json:"node_used_bytes"` // at the end, by node
	// RemoteHits are the pool's hits whose copy lived on another node than
	// the reader's (crossing both NICs); hits[tier] counts them too.
	RemoteHits int64 `json:"remote_hits"`
}

// Instance is one cluster instance's share of a policy's run.
type Instance struct {
	Requests int64            `json:"requests"` // finished
	Rejected int64            `json:"rejected"` // too large for its HBM (router refusals are the router's)
	HitRatio float64          `json:"hit_ratio"`
	Hits     map[string]int64 `json:"hits"` // usable-prefix block hits by the tier they came from
	TTFTms   *Quantiles       `json:"ttft_ms"`
	QueueMs  *Quantiles       `json:"queue_ms"`
	// GPUBusyShare is the share of the run's simulated time the instance
	// ran steps (batched engine; nil for the simple one).
	GPUBusyShare *float64 `json:"gpu_busy_share"`
	Chosen       int64    `json:"chosen"` // requests the router sent it
	// Role is "prefill" or "decode" under disaggregation, else omitted.
	Role string `json:"role,omitempty"`
	// Sources counts the prompt blocks by where they came from (omitted in
	// summaries of older kvsims).
	Sources *Sources `json:"sources,omitempty"`
}

// Sources splits an instance's block accesses by where each block came
// from; they add up to its block accesses.
type Sources struct {
	LocalHBM   int64 `json:"local_hbm"`
	LocalTier  int64 `json:"local_tier"`  // the node's own tiers below hbm
	PoolLocal  int64 `json:"pool_local"`  // the pooled tier, a copy on this node
	PoolRemote int64 `json:"pool_remote"` // the pooled tier, a copy on another node
	Recomputed int64 `json:"recomputed"`  // no usable copy: computed again
	// Transferred (a disaggregated decode instance) came from the HBM of
	// the instance that prefilled it, over the NICs.
	Transferred int64 `json:"transferred,omitempty"`
	// Peer (peer fetch) came from another instance's private host tier,
	// over the NICs.
	Peer int64 `json:"peer,omitempty"`
}

// Total is the block accesses the sources add up to.
func (s *Sources) Total() int64 {
	return s.LocalHBM + s.LocalTier + s.PoolLocal + s.PoolRemote + s.Recomputed + s.Transferred + s.Peer
}

// Router is what a cluster's router decided.
type Router struct {
	Name      string  `json:"name"`
	Decisions []int64 `json:"decisions"` // requests sent to each instance
	Rejected  int64   `json:"rejected"`  // requests it refused
	// BestPrefixShare is, of the routed requests some instance held a
	// cached prefix of, the share sent to an instance holding the longest.
	BestPrefixShare float64 `json:"best_prefix_share"`
	WithPrefix      int64   `json:"with_prefix"`
}

// Routing scores a cluster's routing decisions against the true state at
// each arrival: the cached prefix (any tier) of the chosen instance against
// the longest any eligible instance held. Regret tells lost affinity from
// reuse the workload does not offer.
type Routing struct {
	Decisions int64 `json:"decisions"`
	// RegretBlocks is the blocks of prefix a decision gave up (best - chosen).
	RegretBlocks Spread `json:"regret_blocks"`
	// RegretShare is the share of decisions with regret > 0.
	RegretShare float64 `json:"regret_share"`
	// ChosenLoadMs and BestLoadMs are the mean time to load the chosen and
	// the best instance's prefix, each block from its fastest tier over idle
	// links (HBM blocks free).
	ChosenLoadMs float64 `json:"chosen_load_ms"`
	BestLoadMs   float64 `json:"best_load_ms"`
	// OverTime is the regret per interval of arrival time.
	OverTime *RegretSeries `json:"over_time,omitempty"`
}

// Sessions describes a closed-loop run's sessions (a conversation's turns,
// an agent's tree of calls): each session is a first request and every
// request that follows it, directly or not.
type Sessions struct {
	Sessions int64 `json:"sessions"`
	// MakespanS is from a session's first arrival to its last completion.
	MakespanS Spread `json:"makespan_s"`
	// TTFTByDepthMs is the TTFT of the requests at each depth: 0 the
	// first, 1 those following it, and so on (rejected ones left out).
	TTFTByDepthMs []Spread `json:"ttft_ms_by_depth"`
}

// Spread is a mean, a 99th percentile (nearest rank) and a maximum.
type Spread struct {
	Mean float64 `json:"mean"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// RegretSeries is Routing over equal intervals of arrival time: each
// interval's start, the mean regret of its decisions and their share with
// regret (NaN-free: intervals without decisions are left out).
type RegretSeries struct {
	TimesS     []float64 `json:"times_s"`
	MeanBlocks []float64 `json:"mean_blocks"`
	Share      []float64 `json:"share"`
}

// OrNaN is *q, or NaN in every field when q is nil (no request
// completed): tables and charts then show a gap, never 0.
func (q *Quantiles) OrNaN() Quantiles {
	if q == nil {
		n := math.NaN()
		return Quantiles{Mean: n, P50: n, P90: n, P99: n, Max: n}
	}
	return *q
}

// NoneCompleted says why no policy completed a request, or "" when one
// did: latencies are then undefined (null), not 0.
func (s *Summary) NoneCompleted() string {
	for _, p := range s.Policies {
		if p.Requests > 0 {
			return ""
		}
	}
	t := s.Trace
	switch {
	case t.Requests == 0 && t.SkippedLines > 0:
		why := fmt.Sprintf("all %d lines of the trace were malformed and skipped", t.SkippedLines)
		if t.FirstSkipped != "" {
			why += " (the first: " + t.FirstSkipped + ")"
		}
		return why
	case t.Requests == 0:
		return "the trace has no requests"
	case len(s.Policies) > 0 && s.Policies[0].Rejected == t.Requests && s.Policies[0].Router != nil && s.Policies[0].Router.Rejected > 0:
		r := s.Policies[0].Router
		why := fmt.Sprintf("all %d requests were rejected: router %q refused %d", t.Requests, r.Name, r.Rejected)
		if n := t.Requests - r.Rejected; n > 0 {
			why += fmt.Sprintf(", and %d needed more HBM than an instance holds", n)
		}
		return why + " (slo_reject: no instance's estimate met [slo] ttft_ms)"
	case len(s.Policies) > 0 && s.Policies[0].Rejected == t.Requests && len(s.Tiers) > 0:
		return fmt.Sprintf("all %d requests were rejected: each needs more HBM for its prompt and output KV than tier %q holds (%s)",
			t.Requests, s.Tiers[0].Name, fmtBytes(s.Tiers[0].CapacityBytes))
	}
	return "no request completed"
}

func fmtBytes(n int64) string {
	v, u := float64(n), 0
	for v >= 1024 && u < 4 {
		v, u = v/1024, u+1
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[u]
}

// Run holds wall-clock figures, the only part that differs between two
// runs of the same inputs.
type Run struct {
	WallSeconds            float64 `json:"wall_seconds"`
	BlockAccessesPerSecond float64 `json:"block_accesses_per_second"`
	RequestsPerSecond      float64 `json:"requests_per_second"`
	Workers                int     `json:"workers"`
}

// TimeSeries is sampled state of one policy's run over virtual time.
type TimeSeries struct {
	Policy    string               `json:"policy"`
	IntervalS float64              `json:"interval_s"`
	TimesS    []float64            `json:"times_s"`
	TierUsed  map[string][]float64 `json:"tier_used_fraction"`
	LinkUtil  map[string][]float64 `json:"link_utilization"`
	Queued    []int                `json:"queued_requests"`
	Running   []int                `json:"running_requests"`
	// Batch composition: mean per engine step over each interval (the
	// batched engine's; zeros under the simple engine, absent in series
	// of older kvsims).
	PrefillTokens []float64 `json:"prefill_tokens_per_step,omitempty"`
	DecodeSeqs    []float64 `json:"decode_seqs_per_step,omitempty"`
	Preemptions   []int64   `json:"preemptions,omitempty"` // cumulative at each point
}

// WriteFileAtomic writes data to path through a temporary file and a
// rename, so a failure never leaves a half-written file behind.
func WriteFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }

// MarshalJSON indents v and leaves "->" in keys readable (encoding/json
// escapes '>' for HTML by default); it ends with a newline.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteSummary writes summary.json.
func WriteSummary(path string, s *Summary) error {
	b, err := MarshalJSON(s)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, b)
}

// ReadSummary loads a summary.json, with errors that name the file.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: not a kvsim summary: %v", path, err)
	}
	if s.Scenario == "" || s.Policies == nil {
		return nil, fmt.Errorf("%s: not a kvsim summary: no scenario or policies", path)
	}
	return &s, nil
}
