package scenario

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"kvsim/cluster"
	"kvsim/core"
	"kvsim/internal/endpoint"
	"kvsim/internal/tomlguard"
	"kvsim/param"
	"kvsim/policy"
	"kvsim/results"
	"kvsim/tierkind"
	"kvsim/trace"
)

// Scenario is one validated scenario file with every default filled in.
type Scenario struct {
	Path     string // as given to Load or Parse
	Profile  string // hardware profile applied to default links, if any
	Name     string // key name; default: the file's base name without .toml
	Seed     int64  // key seed; default 1
	Model    Model
	GPU      GPU
	Tiers    []Tier // Tiers[0] is the one hbm tier
	Links    []Link
	Workload Workload
	Policies []Policy
	SLO      SLO      // [slo]; zero when absent
	Sets     []string // --set overrides applied, as given

	// Cluster is [cluster]; zero (Instances 0) when absent, and then left
	// out of the JSON run_ids hash, so scenarios without one keep theirs.
	Cluster Cluster `json:",omitzero"`
}

// Model is the served model: its KV geometry and, for the roofline step
// model, its size.
type Model struct {
	Preset      string  // key preset; "" for none
	Layers      int     // key layers
	KVHeads     int     // key kv_heads
	HeadDim     int     // key head_dim
	Heads       int     // key heads: query heads; 0 when neither given nor preset
	Params      float64 // key params; 0 when neither given nor preset
	DType       string  // fp32, bf16 (default), fp16, fp8, int8
	BlockTokens int     // key block_tokens; default 512, Mooncake's block
}

var dtypeBytes = map[string]int{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

// DTypes lists the accepted element types.
func DTypes() []string { return []string{"fp32", "bf16", "fp16", "fp8", "int8"} }

// DTypeBytes is the size of one element, 0 for an unknown dtype.
func (m Model) DTypeBytes() int { return dtypeBytes[m.DType] }

// BytesPerToken is 2 (K and V) x layers x kv_heads x head_dim x element size.
func (m Model) BytesPerToken() int64 {
	return 2 * int64(m.Layers) * int64(m.KVHeads) * int64(m.HeadDim) * int64(m.DTypeBytes())
}

// BytesPerBlock is BytesPerToken x BlockTokens.
func (m Model) BytesPerBlock() int64 { return m.BytesPerToken() * int64(m.BlockTokens) }

// WeightBytes is Params x element size: the weights a step reads.
func (m Model) WeightBytes() float64 { return m.Params * float64(m.DTypeBytes()) }

// GPU is the compute model.
type GPU struct {
	Engine           string // key engine: "batched" (default) or "simple"
	MaxBatchedTokens int    // key max_num_batched_tokens; default 8192
	MaxSeqs          int    // key max_num_seqs: running requests at most; default 256
	PageTokens       int    // key page_tokens: the engine's KV page for generated tokens; default 16
	StepModel        string // key step_model: "roofline" or "linear"

	Preset       string  // key preset; "" for none
	TP           int     // key tp: tensor-parallel GPUs; default 1
	PeakTFLOPs   float64 // key peak_tflops: dense bf16 of one GPU; 0 when unknown
	HBMBandwidth float64 // key hbm_bandwidth: bytes/s of one GPU; 0 when unknown
	HBMCapacity  int64   // key hbm_capacity: bytes of one GPU; 0 when unknown
	ComputeEff   float64 // key compute_efficiency; default 0.5
	MemoryEff    float64 // key memory_efficiency; default 0.8
	StepOverhead int64   // key step_overhead, ns; default 1ms

	// The linear step model's coefficients, ns per unit (keys c0,
	// c_prefill, c_decode, c_ctx). LegacyStep: none was given, so the
	// simulator derives the step from the rates below (C0 and CPrefill
	// then show what it derives).
	C0, CPrefill, CDecode, CCtx float64
	LegacyStep                  bool

	PrefillTokensPerSec  float64 // key prefill_tokens_per_s; default 20000
	AttentionNsPerToken2 float64 // key attention_ns_per_token2: quadratic attention cost; default 0
	DecodeTokensPerSec   float64 // key decode_tokens_per_s, per running request; default 50
	Load                 string  // key load: "layerwise" (default, loads overlap compute layer by layer) or "serial"
	HBMFree              string  // key hbm_free: "landed" (default: an evicted block's HBM is free once its copy left HBM) or "evict" (at once)
}

// SLO is the [slo] table: targets a request meets or misses; 0 = unset.
type SLO struct {
	TTFTms float64 // key ttft_ms
	TPOTms float64 // key tpot_ms
}

// Set reports whether any target is set.
func (s SLO) Set() bool { return s.TTFTms > 0 || s.TPOTms > 0 }

// Cluster is the [cluster] table: Instances copies of the GPU and the
// tiers, and the router choosing each request's instance.
type Cluster struct {
	// Instances is key instances, or prefill_instances + decode_instances;
	// 0: no [cluster], one GPU.
	Instances int
	Router    string // key router; default round_robin
	// The routers' keys, each router's declared in its file (each reads
	// its own); slo_reject needs [slo] ttft_ms.
	cluster.Keys

	// Prefill is key prefill_instances: the first Prefill instances
	// prefill, the rest decode; 0 without disaggregation.
	Prefill int `json:",omitempty"`
	// Every node's NIC (keys nic_bandwidth, bytes/s each way, nic_latency,
	// ns, nic_lanes). Empty in JSON: a run's ID hashes them only when a
	// pool or disaggregation sends bytes through them (experiment's runID).
	NICBandwidth float64 `json:",omitempty"`
	NICLatency   int64   `json:",omitempty"`
	NICLanes     int     `json:",omitempty"`
	// ViewDelay is key view_delay, ns: how late the router sees the cluster.
	ViewDelay int64 `json:",omitempty"`
}

// Pool is the index of the cluster-scoped tier (scope = "cluster"), -1
// when there is none.
func (s *Scenario) Pool() int {
	for i, t := range s.Tiers {
		if t.Scope == ScopeCluster {
			return i
		}
	}
	return -1
}

// ScopeCluster is the scope of a tier shared by a cluster's instances.
const ScopeCluster = "cluster"

// GPUMemoryUtilization is the share of GPU memory the hbm tier's default
// capacity may fill with weights and KV: vLLM's gpu_memory_utilization
// default.
const GPUMemoryUtilization = 0.9

// Tier is one level of the memory hierarchy.
type Tier struct {
	Name      string
	Kind      string  // hbm, pinned, dram, ssd, nvmeof, remote_dram
	Capacity  int64   // bytes
	Bandwidth float64 // bytes/s
	Latency   int64   // ns
	CostPerGB float64 // key cost_per_gb, dollars per 1e9 bytes
	// Shared (key shared_bandwidth): every transfer into or out of the tier,
	// over any link and in either direction, also queues for one pipe of
	// Bandwidth, as an SSD's reads and writes share its flash.
	Shared bool
	// Scope (key scope) is "node" (the default: each instance has its own
	// copy) or "cluster": one pool shared by a [cluster]'s instances, to
	// which each node contributes Capacity. "" reads as "node". A run's ID
	// hashes it for a cluster tier only, so that IDs of scenarios without
	// a pool stay as they were.
	Scope string `json:",omitempty"`
	// Endpoint (remote_dram only) is the Redis or Valkey server replay
	// --real keeps the tier in; "" emulates it. Left out of JSON when
	// empty, so run ids of scenarios without it do not change.
	Endpoint string `json:",omitempty" key:"endpoint"`
	// Device (nvmeof only) is the block device or file replay --real
	// keeps the tier in; "" a bucket store. Left out of JSON when empty.
	Device string `json:",omitempty" key:"device"`
}

// CheckEndpoint checks a remote_dram endpoint: redis:// or valkey://, a
// host, a port, and at most a database number for a path; or rdma://, a
// host, a port, and at most the local device and GID index as
// parameters (internal/endpoint, which the stores read it with too).
func CheckEndpoint(s string) error {
	_, err := endpoint.Parse(s)
	return err
}

// Link connects two tiers; data moves both ways.
type Link struct {
	From, To         int     // indices into Scenario.Tiers
	Bandwidth        float64 // bytes/s, From -> To
	ReverseBandwidth float64 // bytes/s, To -> From; default Bandwidth
	Latency          int64   // ns, From -> To
	ReverseLatency   int64   // ns, To -> From; default Latency
	Lanes            int     // transfers in flight, hiding latency; default 1
}

// Workload names the trace to replay.
type Workload struct {
	// Trace is absolute, joined to the scenario file's directory when
	// written in the file, or as given when set by --set (relative to the
	// working directory, as the shell completes it).
	Trace        string
	TraceLine    int     `json:"-"` // the key's line in the file; -1: --set; 0: none (CheckTrace's message)
	Format       string  // "mooncake" (default), "bailian", "azure", "burstgpt" or "synthetic"
	Limit        int     // requests to read; 0 = all
	SkipBadLines bool    // key skip_bad_lines
	Speedup      float64 // arrival times are divided by it; default 1
	// Closed is key mode = "closed": closed-loop sessions (empty in JSON
	// when open, so open runs keep their run IDs).
	Closed bool `json:",omitempty"`
	// Gen is set for format = "synthetic": the trace is generated, in
	// memory, from the scenario's seed (Trace then only labels it).
	Gen *trace.GenConfig
	// Inject is [workload.inject], nil without one: block ids for the
	// requests without them, from the prefix model (kvsim/workload.Inject)
	// seeded by the scenario's seed.
	Inject *results.Inject `json:",omitempty"`
}

// Policy is one [[policy]] entry: an eviction strategy and its knobs.
type Policy struct {
	Name string // label in results; default Eviction
	// Eviction is a policy.Names() entry when every tier runs that policy,
	// else the per-tier table rendered in tier order: "hbm=lru,ssd=fifo".
	Eviction  string
	Evictions []string // the policy.Names() entry of each tier, in Scenario.Tiers order
	Params    map[string]float64

	// Reserved for strategies beyond eviction; "" / 0 mean the default.
	Admission       string
	Promotion       string
	Write           string
	Prefetch        string
	Recompute       string // "never" (default) or "when-cheaper"
	PrefetchTimeout int64  // ns; key prefetch_timeout
	Stage           string // "copy" (default) or "pass"

	// Strategy is the above as the core reads them, parsed and checked at
	// load. Left out of JSON: it only restates the strings (kvsim's run_id
	// hashes the scenario's JSON and must not change with it).
	Strategy core.Strategy `json:"-"`
}

// Kinds lists the tier kinds in hierarchy order (tierkind's registry).
func Kinds() []string { return tierkind.Names() }

// KindDefaults returns the defaults of a tier kind (Name is empty).
func KindDefaults(kind string) (Tier, bool) {
	k, ok := tierkind.Lookup(kind)
	if !ok {
		return Tier{}, false
	}
	return Tier{Kind: kind, Capacity: k.Capacity, Bandwidth: k.Bandwidth, Latency: k.Latency, CostPerGB: k.CostPerGB}, true
}

// PageableBandwidth is the default hbm<->dram link rate: a D2H copy from
// pageable host memory (background section 1: ~1 GB/s vs ~25 GB/s pinned).
const PageableBandwidth = 1e9

// DefaultLink is the link Parse fills in between tiers a and b: the slower
// tier's bandwidth (PageableBandwidth between hbm and dram) and the larger
// latency, both ways, one lane.
func DefaultLink(tiers []Tier, a, b int) Link {
	ta, tb := tiers[a], tiers[b]
	bw := min(ta.Bandwidth, tb.Bandwidth)
	if pair(ta.Kind, tb.Kind, "hbm", "dram") {
		bw = PageableBandwidth
	}
	lat := max(ta.Latency, tb.Latency)
	return Link{From: a, To: b, Bandwidth: bw, ReverseBandwidth: bw, Latency: lat, ReverseLatency: lat, Lanes: 1}
}

func pair(a, b, x, y string) bool { return a == x && b == y || a == y && b == x }

// Formats lists the accepted workload formats.
func Formats() []string { return append(trace.Formats(), "synthetic") }

// Error is a scenario problem on one line: file, line when known, key.
type Error struct {
	Path string
	Line int // 0 when unknown
	Msg  string
	Err  error // underlying cause (a toml.ParseError, an os error), if any
}

func (e *Error) Error() string {
	s := e.Path + ": " + e.Msg
	if e.Line == setLine {
		s = e.Path + " (--set): " + e.Msg
	}
	if e.Line > 0 {
		s = fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads and parses a scenario file.
func Load(path string) (*Scenario, error) { return LoadWith(path, nil) }

// LoadWith is Load with --set overrides (see applySets), applied before
// validation so that an override is checked like the key it replaces.
func LoadWith(path string, sets []string) (*Scenario, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWith(data, path, sets)
}

// readFile reads a scenario file; an error names the path once (not the
// path inside the os error as well).
// At most tomlguard.MaxBytes are read: a device or a huge file is refused,
// not read whole.
func readFile(path string) ([]byte, error) {
	data, err := tomlguard.ReadFile(path)
	if err != nil {
		msg := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		return nil, &Error{Path: path, Msg: msg, Err: err}
	}
	return data, nil
}

// MaxNameLen bounds scenario and tier names.
const MaxNameLen = 64

// CheckName reports why name cannot be a scenario or tier name. Both become
// path components (kvsim run writes OUT/<scenario>/, kvsim replay keeps a
// storage tier in DIR/tier-<name>/), so only ASCII letters, digits, '.',
// '_' and '-' are allowed, not first a '.', at most MaxNameLen bytes: no
// separator, no "..", nothing hidden, nothing a shell or CSV header would
// need to quote.
func CheckName(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("is %d bytes long; at most %d are allowed (it names a folder)", len(name), MaxNameLen)
	}
	if name[0] == '.' {
		return errors.New("must not start with '.' (it names a folder)")
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("has %q: only ASCII letters, digits, '.', '_' and '-' are allowed (it names a folder)", c)
		}
	}
	return nil
}

// Parse parses scenario text. path names the file in messages, gives the
// default name and anchors a relative trace path.
func Parse(data []byte, path string) (*Scenario, error) { return ParseWith(data, path, nil) }

// ParseWith is Parse with --set overrides (see applySets).
func ParseWith(data []byte, path string, sets []string) (*Scenario, error) {
	p := &parser{path: path, file: path}
	if p.path == "" {
		p.path = "scenario"
	}
	root, err := p.decode(data)
	if err != nil {
		return nil, err
	}
	if err := applySets(p, root, sets); err != nil {
		return nil, err
	}
	s := &Scenario{Path: path, Sets: sets}
	if err := p.parse(root, s); err != nil {
		return nil, blameSet(data, path, sets, err)
	}
	return s, nil
}

// decode reads data as TOML and indexes its lines for messages.
func (p *parser) decode(data []byte) (map[string]any, error) {
	// The TOML library's cost is quadratic in nesting: bound it first.
	if e := tomlguard.Check(data); e != nil {
		return nil, &Error{Path: p.path, Line: e.Line, Msg: e.Msg, Err: e}
	}
	src := string(data)
	var root map[string]any
	if _, err := toml.Decode(src, &root); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			// Position.Line is one too far when the offending byte is a
			// newline; the byte offset is exact.
			line := pe.Position.Line
			if st := pe.Position.Start; st >= 0 && st <= len(src) {
				line = strings.Count(src[:st], "\n") + 1
			}
			return nil, &Error{Path: p.path, Line: line, Msg: "toml: " + pe.Message, Err: err}
		}
		return nil, &Error{Path: p.path, Msg: err.Error(), Err: err}
	}
	p.lines = indexLines(src)
	return root, nil
}

type parser struct {
	path       string // for messages
	file       string // as given; anchors relative traces
	lines      lineIndex
	profile    *Profile
	blockBytes int64 // the model's, once parsed: bandwidths must move a block within the time limit
}

// table is one instance of a TOML table together with what messages need.
type table struct {
	p     *parser
	decl  *section // its declaration in schema
	name  string   // schema name: "", "model", "tier", ...
	idx   int      // instance of an array of tables
	label string   // message prefix: "", "model", `tier "dram"`, "link 2"
	m     map[string]any
}

func (t *table) line(key string) int { return t.p.lines.line(t.name, t.idx, key) }

// errf reports a problem with key ("" for the table itself).
func (t *table) errf(key, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = key + ": " + msg
	}
	if t.label != "" {
		msg = t.label + ": " + msg
	}
	return &Error{Path: t.p.path, Line: t.line(key), Msg: msg}
}

// unknown reports the earliest key of t that its declaration lacks
// ([[policy]]'s parameters are checked with its eviction policy).
func (t *table) unknown() *Error {
	if t == nil || t.decl.params != "" {
		return nil
	}
	var bad []string
	for k := range t.m {
		if !t.known(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	k := t.byLine(bad)[0]
	msg := fmt.Sprintf("unknown key %q in %s", k, t.decl.header())
	if t.name == "" {
		switch t.m[k].(type) {
		case map[string]any:
			msg = fmt.Sprintf("unknown table [%s]", k)
		case []map[string]any:
			msg = fmt.Sprintf("unknown table [[%s]]", k)
		}
	}
	return &Error{Path: t.p.path, Line: t.line(k), Msg: msg}
}

// byLine sorts keys in file order (keys without a known line last).
func (t *table) byLine(keys []string) []string {
	sort.Slice(keys, func(i, j int) bool {
		li, lj := t.line(keys[i]), t.line(keys[j])
		if (li == 0) != (lj == 0) {
			return lj == 0
		}
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	return keys
}

// section returns root[name] as a table; nil when absent and optional.
func (p *parser) section(root map[string]any, decl *section) (*table, error) {
	name := decl.name
	if parent, sub, nested := strings.Cut(name, "."); nested { // [workload.inject]
		m, _ := root[parent].(map[string]any) // a parent that is not a table is reported as such
		v, ok := m[sub]
		if !ok {
			return nil, nil
		}
		t, isTable := v.(map[string]any)
		if !isTable {
			return nil, &Error{Path: p.path, Line: p.lines.line(parent, 0, sub), Msg: fmt.Sprintf("%s: %s: must be a table ([%s]), got %s", parent, sub, name, describe(v))}
		}
		return &table{p: p, decl: decl, name: name, label: name, m: t}, nil
	}
	v, ok := root[name]
	if !ok {
		if decl.required {
			return nil, &Error{Path: p.path, Msg: fmt.Sprintf("missing [%s] table", name)}
		}
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, name), Msg: fmt.Sprintf("%s: must be a table ([%s]), got %s", name, name, describe(v))}
	}
	return &table{p: p, decl: decl, name: name, label: name, m: m}, nil
}

// array returns root[name] as an array of tables; given is false when absent.
func (p *parser) array(root map[string]any, decl *section) (ts []*table, given bool, err error) {
	name := decl.name
	v, ok := root[name]
	if !ok {
		return nil, false, nil
	}
	ms, ok := asTables(v)
	if !ok {
		return nil, true, &Error{Path: p.path, Line: p.lines.line("", 0, name), Msg: fmt.Sprintf("%s: must be an array of tables ([[%s]]), got %s", name, name, describe(v))}
	}
	ts = make([]*table, len(ms))
	for i, m := range ms {
		ts[i] = &table{p: p, decl: decl, name: name, idx: i, label: fmt.Sprintf("%s %d", name, i+1), m: m}
	}
	return ts, true, nil
}

func (p *parser) parse(root map[string]any, s *Scenario) error {
	top := &table{p: p, decl: schema[0], m: root}
	tables := map[string][]*table{"": {top}}
	given := map[string]bool{}
	for _, decl := range schema[1:] {
		if decl.array {
			ts, ok, err := p.array(root, decl)
			if err != nil {
				return err
			}
			tables[decl.name], given[decl.name] = ts, ok
			continue
		}
		t, err := p.section(root, decl)
		if err != nil {
			return err
		}
		tables[decl.name] = []*table{t}
	}
	model, gpu, workload := tables["model"][0], tables["gpu"][0], tables["workload"][0]
	tiers, links, policies := tables["tier"], tables["link"], tables["policy"]

	// Typos first, wherever they are: a misspelt key silently takes its
	// default, which would otherwise surface as a confusing later error.
	var first *Error
	for _, decl := range schema {
		for _, t := range tables[decl.name] {
			if e := t.unknown(); e != nil && (first == nil || e.Line > 0 && (first.Line == 0 || e.Line < first.Line)) {
				first = e
			}
		}
	}
	if first != nil {
		return first
	}

	var err error
	if s.Name, err = top.str("name"); err != nil {
		return err
	}
	if _, ok := root["name"]; ok && strings.TrimSpace(s.Name) == "" {
		return top.errf("name", "must not be empty")
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(s.Path), ".toml")
		if s.Path == "" {
			s.Name = "scenario"
		}
		if err := CheckName(s.Name); err != nil {
			return top.errf("name", "the default, the file's name %q, %v; give the scenario a name", s.Name, err)
		}
	} else if err := CheckName(s.Name); err != nil {
		return top.errf("name", "%q %v", s.Name, err)
	}
	if s.Seed, err = top.integer("seed"); err != nil {
		return err
	}
	if s.Model, err = parseModel(model); err != nil {
		return err
	}
	p.blockBytes = s.Model.BytesPerBlock()
	if s.GPU, err = parseGPU(gpu, s.Model, model); err != nil {
		return err
	}
	if s.Tiers, err = p.parseTiers(tiers, s.GPU, s.Model); err != nil {
		return err
	}
	if _, ok := root["profile"]; ok {
		name, err := top.str("profile")
		if err != nil {
			return err
		}
		if p.profile, err = LoadProfile(p.filePath("", "profile", name)); err != nil {
			return &Error{Path: p.path, Line: top.line("profile"), Msg: err.Error()}
		}
		s.Profile = p.profile.Path
	}
	if s.Links, err = p.parseLinks(links, given["link"], s.Tiers); err != nil {
		return err
	}
	if err := p.reachable(tiers, s.Tiers, s.Links); err != nil {
		return err
	}
	if s.Workload, err = parseWorkload(workload, s.Seed, s.Model.BlockTokens); err != nil {
		return err
	}
	if it := tables["workload.inject"][0]; it != nil {
		if s.Workload.Inject, err = parseInject(it); err != nil {
			return err
		}
	}
	if s.Policies, err = p.parsePolicies(policies, s.Tiers); err != nil {
		return err
	}
	if slo := tables["slo"][0]; slo != nil {
		if s.SLO.TTFTms, err = slo.optNumber("ttft_ms", 0); err != nil {
			return err
		}
		if s.SLO.TPOTms, err = slo.optNumber("tpot_ms", 0); err != nil {
			return err
		}
	}
	cl := tables["cluster"][0]
	if cl != nil {
		if s.Cluster, err = parseCluster(cl, s.SLO); err != nil {
			return err
		}
	}
	if i := s.Pool(); i >= 0 {
		t := tiers[i]
		if cl == nil {
			return t.errf("scope", `"cluster" needs a [cluster] table: the pool is shared by its instances`)
		}
		if total, ok := MulChecked(int64(s.Cluster.Instances), s.Tiers[i].Capacity); !ok || total > core.MaxTime {
			return t.errf("capacity", "%s from each of %d instances is past what kvsim can count in bytes", FormatBytes(s.Tiers[i].Capacity), s.Cluster.Instances)
		}
	}
	return nil
}

func parseCluster(t *table, slo SLO) (Cluster, error) {
	var c Cluster
	var err error
	if c.Instances, c.Prefill, err = t.instances(); err != nil {
		return c, err
	}
	if c.Router, err = t.str("router"); err != nil {
		return c, err
	}
	for _, k := range cluster.RouterKeys() {
		v, err := t.value(k.Name, k.Default)
		if err != nil {
			return c, err
		}
		c.Set(k.Name, v)
	}
	if c.SLOReject && !(slo.TTFTms > 0) {
		return c, t.errf("slo_reject", "needs [slo] ttft_ms")
	}
	if c.NICBandwidth, err = t.numberOr("nic_bandwidth", DefaultNICBandwidth); err != nil {
		return c, err
	}
	if c.NICLatency, err = t.integer("nic_latency"); err != nil {
		return c, err
	}
	lanes, err := t.integer("nic_lanes")
	if err != nil {
		return c, err
	}
	c.NICLanes = int(lanes)
	if c.ViewDelay, err = t.integer("view_delay"); err != nil {
		return c, err
	}
	return c, nil
}

// DefaultNICBandwidth is [cluster] nic_bandwidth's default: 200 Gbit/s.
const DefaultNICBandwidth = 25e9

// instances reads [cluster]'s size: instances, or prefill_instances and
// decode_instances (then prefill is the first).
func (t *table) instances() (total, prefill int, err error) {
	var n [3]int64 // instances, prefill_instances, decode_instances; 0: absent
	for i, key := range []string{"instances", "prefill_instances", "decode_instances"} {
		if n[i], err = t.optInt(key, 0); err != nil { // types and ranges first
			return 0, 0, err
		}
	}
	whole, pre, dec := n[0] > 0, n[1] > 0, n[2] > 0
	switch {
	case whole && pre && dec && n[0] == n[1]+n[2]:
		// All three agree: a colocated scenario split by --set.
	case whole && (pre || dec):
		key := "prefill_instances"
		if !pre {
			key = "decode_instances"
		} else if dec {
			return 0, 0, t.errf("instances", "%d, but %d prefill + %d decode instances: give instances, or the two, or all three agreeing", n[0], n[1], n[2])
		}
		return 0, 0, t.errf(key, "not alone with instances: give instances, or prefill_instances and decode_instances (all three when they agree)")
	case whole:
		return int(n[0]), 0, nil
	case pre != dec:
		have, want := "prefill_instances", "decode_instances"
		if dec {
			have, want = want, have
		}
		return 0, 0, t.errf(have, "needs %s too (prefill/decode disaggregation)", want)
	case !pre:
		return 0, 0, t.errf("instances", "required (the number of instances; or prefill_instances and decode_instances)")
	case n[1]+n[2] > MaxInstances:
		return 0, 0, t.errf("decode_instances", "%d prefill + %d decode instances: at most %d in all", n[1], n[2], MaxInstances)
	}
	return int(n[1] + n[2]), int(n[1]), nil
}

// maxDim bounds model dimensions so that byte counts cannot overflow.
const maxDim = 1 << 24

func parseModel(t *table) (Model, error) {
	var m Model
	var err error
	if m.Preset, err = t.str("preset"); err != nil {
		return m, err
	}
	pre, hasPreset := modelPresets[m.Preset]
	for _, d := range []struct {
		key string
		dst *int
		def int
	}{{"layers", &m.Layers, pre.Layers}, {"kv_heads", &m.KVHeads, pre.KVHeads}, {"head_dim", &m.HeadDim, pre.HeadDim},
		{"heads", &m.Heads, pre.Heads}, {"block_tokens", &m.BlockTokens, 0}} {
		def := int64(d.def)
		if d.key == "block_tokens" {
			def = t.decl.field(d.key).Default.(int64)
		}
		_, given := t.m[d.key]
		if !given && !hasPreset && d.key != "heads" && d.key != "block_tokens" {
			return m, t.errf(d.key, "required (or a preset)")
		}
		var v any
		if given || def != 0 {
			if v, err = t.value(d.key, def); err != nil {
				return m, err
			}
		}
		n, _ := v.(int64)
		*d.dst = int(n)
		if d.key == "heads" {
			if m.Params, err = t.optNumber("params", pre.Params); err != nil {
				return m, err
			}
			if m.DType, err = t.str("dtype"); err != nil {
				return m, err
			}
		}
	}
	if m.Heads > 0 && m.Heads%m.KVHeads != 0 {
		key := "heads"
		if _, ok := t.m[key]; !ok {
			key = "kv_heads"
		}
		return m, t.errf(key, "%d query heads are not a multiple of %d kv_heads", m.Heads, m.KVHeads)
	}
	if m.WeightBytes() >= float64(math.MaxInt64)/4 {
		return m, t.errf("params", "%g parameters of %s is past what kvsim can count in bytes", m.Params, m.DType)
	}
	if _, ok := MulChecked(2, int64(m.DTypeBytes()), int64(m.Layers), int64(m.KVHeads), int64(m.HeadDim), int64(m.BlockTokens)); !ok {
		return m, t.errf("", "KV bytes per block overflow int64")
	}
	return m, nil
}

// MulChecked multiplies non-negative numbers, reporting int64 overflow.
func MulChecked(xs ...int64) (int64, bool) {
	v := int64(1)
	for _, x := range xs {
		hi, lo := bits.Mul64(uint64(v), uint64(x))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		v = int64(lo)
	}
	return v, true
}

func parseGPU(t *table, m Model, mt *table) (GPU, error) {
	if t == nil {
		t = &table{p: mt.p, decl: sectionNamed("gpu"), name: "gpu", label: "gpu"} // every key at its default
	}
	given := func(key string) bool { _, ok := t.m[key]; return ok }
	var g GPU
	var err error
	for _, k := range []struct {
		key string
		dst *string
	}{{"engine", &g.Engine}} {
		if *k.dst, err = t.str(k.key); err != nil {
			return g, err
		}
	}
	for _, k := range []struct {
		key string
		dst *int
	}{{"max_num_batched_tokens", &g.MaxBatchedTokens}, {"max_num_seqs", &g.MaxSeqs}, {"page_tokens", &g.PageTokens}} {
		n, err := t.integer(k.key)
		if err != nil {
			return g, err
		}
		*k.dst = int(n)
	}
	if g.StepModel, err = t.str("step_model"); err != nil {
		return g, err
	}
	if g.Preset, err = t.str("preset"); err != nil {
		return g, err
	}
	pre := gpuPresets[g.Preset]
	tp, err := t.integer("tp")
	if err != nil {
		return g, err
	}
	g.TP = int(tp)
	if g.PeakTFLOPs, err = t.optNumber("peak_tflops", pre.PeakTFLOPs); err != nil {
		return g, err
	}
	if g.HBMBandwidth, err = t.optNumber("hbm_bandwidth", pre.HBMBandwidth); err != nil {
		return g, err
	}
	if g.HBMCapacity, err = t.optInt("hbm_capacity", pre.HBMCapacity); err != nil {
		return g, err
	}
	if g.ComputeEff, err = t.number("compute_efficiency"); err != nil {
		return g, err
	}
	if g.MemoryEff, err = t.number("memory_efficiency"); err != nil {
		return g, err
	}
	if g.StepOverhead, err = t.integer("step_overhead"); err != nil {
		return g, err
	}
	coef := ""
	for _, k := range []struct {
		key string
		dst *float64
	}{{"c0", &g.C0}, {"c_prefill", &g.CPrefill}, {"c_decode", &g.CDecode}, {"c_ctx", &g.CCtx}} {
		if *k.dst, err = t.optNumber(k.key, 0); err != nil {
			return g, err
		}
		if coef == "" && given(k.key) {
			coef = k.key
		}
	}
	if g.PrefillTokensPerSec, err = t.number("prefill_tokens_per_s"); err != nil {
		return g, err
	}
	if g.AttentionNsPerToken2, err = t.number("attention_ns_per_token2"); err != nil {
		return g, err
	}
	if g.AttentionNsPerToken2 >= float64(core.MaxTime) {
		return g, t.errf("attention_ns_per_token2", "%g ns for one pair of tokens is past %s", g.AttentionNsPerToken2, timeLimit)
	}
	if g.DecodeTokensPerSec, err = t.number("decode_tokens_per_s"); err != nil {
		return g, err
	}
	if g.Load, err = t.str("load"); err != nil {
		return g, err
	}
	if g.HBMFree, err = t.str("hbm_free"); err != nil {
		return g, err
	}

	// The step model: explicit, or what the keys given describe.
	if !given("step_model") {
		switch {
		case coef != "":
			g.StepModel = "linear"
		case g.Preset != "":
			g.StepModel = "roofline"
		case given("prefill_tokens_per_s") || given("decode_tokens_per_s"):
			g.StepModel = "linear" // a scenario written for the rate engine
		case given("peak_tflops") || given("hbm_bandwidth"):
			g.StepModel = "roofline"
		default:
			g.StepModel = "linear" // nothing describes the GPU: the default rates
		}
	}
	for _, f := range t.decl.fields {
		if f.Only != "" && f.Only != `step_model = "`+g.StepModel+`"` && given(f.Name) {
			return g, t.errf(f.Name, "only with %s (step_model is %q)", f.Only, g.StepModel)
		}
	}
	switch g.StepModel {
	case "linear":
		if coef == "" {
			g.LegacyStep = true
			g.C0, g.CPrefill = 1e9/g.DecodeTokensPerSec, 1e9/g.PrefillTokensPerSec
		}
	case "roofline":
		if g.Engine != "batched" {
			break // only the batched engine steps
		}
		need := func(tt *table, key, what string) error {
			return tt.errf(key, `required for step_model = "roofline" (%s)`, what)
		}
		switch {
		case g.PeakTFLOPs == 0:
			return g, need(t, "peak_tflops", "or a [gpu] preset: "+strings.Join(GPUPresets(), ", "))
		case g.HBMBandwidth == 0:
			return g, need(t, "hbm_bandwidth", "or a [gpu] preset: "+strings.Join(GPUPresets(), ", "))
		case m.Params == 0:
			return g, need(mt, "params", "or a [model] preset: "+strings.Join(ModelPresets(), ", "))
		case m.Heads == 0:
			return g, need(mt, "heads", "query heads, or a [model] preset")
		}
		// One token's step must stay within simulated time.
		tp := float64(g.TP)
		compute := 2 * m.Params / (g.PeakTFLOPs * 1e12 * tp * g.ComputeEff) * 1e9
		memory := m.WeightBytes() / (g.HBMBandwidth * tp * g.MemoryEff) * 1e9
		switch {
		case !(compute+float64(g.StepOverhead) < float64(core.MaxTime)):
			key := "peak_tflops"
			if !given(key) {
				key = "compute_efficiency"
			}
			return g, t.errf(key, "one token takes %s of compute, past %s", years(compute), timeLimit)
		case !(memory+float64(g.StepOverhead) < float64(core.MaxTime)):
			key := "hbm_bandwidth"
			if !given(key) {
				key = "memory_efficiency"
			}
			return g, t.errf(key, "one step reads the weights in %s, past %s", years(memory), timeLimit)
		case math.IsInf(g.PeakTFLOPs*1e12*tp, 0):
			return g, t.errf("peak_tflops", "%g TFLOP/s x tp %d is past what a float64 holds", g.PeakTFLOPs, g.TP)
		case math.IsInf(g.HBMBandwidth*tp, 0):
			return g, t.errf("hbm_bandwidth", "%g B/s x tp %d is past what a float64 holds", g.HBMBandwidth, g.TP)
		}
	}
	return g, nil
}

// hbmDefault is the hbm tier's capacity when the file gives none: with
// the GPU's memory known, what vLLM leaves for KV
// (GPUMemoryUtilization x memory of the tp GPUs, minus the weights);
// else the kind's default. ok is false, with why, when the weights leave
// nothing or are unknown.
func hbmDefault(g GPU, m Model, kindDefault int64) (capacity int64, why string) {
	if g.HBMCapacity == 0 {
		return kindDefault, ""
	}
	if m.Params == 0 {
		return 0, "required with a GPU memory size (a [gpu] preset or hbm_capacity) unless [model] params or preset sizes the weights"
	}
	total := GPUMemoryUtilization * float64(g.HBMCapacity) * float64(g.TP)
	free := total - m.WeightBytes()
	if !(free >= 1) || free >= float64(math.MaxInt64) {
		return 0, fmt.Sprintf("%s of weights leave no room for KV in %g x %s x tp %d; give capacity or raise tp",
			FormatBytes(int64(min(m.WeightBytes(), math.MaxInt64/2))), GPUMemoryUtilization, FormatBytes(g.HBMCapacity), g.TP)
	}
	return int64(free), ""
}

func (p *parser) parseTiers(ts []*table, g GPU, m Model) ([]Tier, error) {
	if len(ts) == 0 {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, "tier"), Msg: "missing [[tier]]: at least one tier (the hbm tier) is required"}
	}
	if len(ts) > core.MaxTiers {
		return nil, ts[core.MaxTiers].errf("", "too many tiers: at most %d", core.MaxTiers)
	}
	out := make([]Tier, len(ts))
	seen := map[string]int{}
	pool := -1 // the cluster-scoped tier
	for i, t := range ts {
		name, err := t.str("name")
		if err != nil {
			return nil, err
		}
		_, named := t.m["name"]
		if named {
			if strings.TrimSpace(name) == "" {
				return nil, t.errf("name", "must not be empty")
			}
			t.label = fmt.Sprintf("tier %q", name)
		}
		kind, err := t.str("kind")
		if err != nil {
			return nil, err
		}
		def, _ := KindDefaults(kind)
		if !named {
			name = kind // an unnamed tier is called by its kind
			t.label = fmt.Sprintf("tier %q", name)
		} else if err := CheckName(name); err != nil {
			return nil, t.errf("name", "%q %v", name, err)
		}
		if j, dup := seen[name]; dup {
			return nil, t.errf("name", "duplicate tier name (tier %d has it too)", j+1)
		}
		seen[name] = i
		if i == 0 && kind != "hbm" {
			return nil, t.errf("kind", `the first tier must be "hbm", got %q`, kind)
		}
		if i > 0 && kind == "hbm" {
			return nil, t.errf("kind", `only one "hbm" tier is allowed (the first)`)
		}
		tier := def
		tier.Name = name
		if _, given := t.m["capacity"]; !given && kind == "hbm" {
			var why string
			if def.Capacity, why = hbmDefault(g, m, def.Capacity); why != "" {
				return nil, t.errf("capacity", "%s", why)
			}
		}
		if tier.Capacity, err = t.intOr("capacity", def.Capacity); err != nil {
			return nil, err
		}
		if tier.Bandwidth, err = t.numberOr("bandwidth", def.Bandwidth); err != nil {
			return nil, err
		}
		if tier.Latency, err = t.intOr("latency", def.Latency); err != nil {
			return nil, err
		}
		if tier.CostPerGB, err = t.numberOr("cost_per_gb", def.CostPerGB); err != nil {
			return nil, err
		}
		if tier.Shared, err = t.boolean("shared_bandwidth"); err != nil {
			return nil, err
		}
		if tier.Scope, err = t.str("scope"); err != nil {
			return nil, err
		}
		if tier.Scope == ScopeCluster {
			switch {
			case i == 0:
				return nil, t.errf("scope", `the hbm tier cannot be "cluster": each instance has its own HBM`)
			case pool >= 0:
				return nil, t.errf("scope", `only one tier can be "cluster" (tier %q is)`, out[pool].Name)
			}
			pool = i
		}
		for _, k := range tierkind.Keys() { // a kind's own keys, only on a tier of that kind
			raw, given := t.m[k.Name]
			if !given {
				continue
			}
			f := t.decl.field(k.Name)
			v, err := t.convert(f, raw, true, nil) // a type error first, then the kind's, then the value's
			if err != nil {
				return nil, err
			}
			if owner := tierkind.Owner(k.Name); owner != kind {
				o, _ := tierkind.Lookup(owner)
				return nil, t.errf(k.Name, `only %s %q tier has one (this tier is %q)`, o.Article, owner, kind)
			}
			if err := t.check(f, v); err != nil {
				return nil, err
			}
			if !param.Set(&tier, k.Name, v) {
				panic("scenario: Tier has no field for key " + k.Name)
			}
		}
		out[i] = tier
	}
	if pool >= 0 && pool != len(out)-1 {
		return nil, ts[pool].errf("scope", `"cluster" only for the last tier (tier %q follows)`, out[pool+1].Name)
	}
	return out, nil
}

func (p *parser) parseLinks(ts []*table, given bool, tiers []Tier) ([]Link, error) {
	if !given {
		// No [[link]]: a chain in file order, hbm -> next -> next.
		links := make([]Link, 0, len(tiers)-1)
		for i := 1; i < len(tiers); i++ {
			l := DefaultLink(tiers, i-1, i)
			p.profile.applyDefault(&l, tiers)
			links = append(links, l)
		}
		return links, nil
	}
	index := map[string]int{}
	for i, t := range tiers {
		index[t.Name] = i
	}
	seen := map[[2]int]int{}
	out := make([]Link, 0, len(ts))
	for n, t := range ts {
		var ends [2]int
		for e, key := range []string{"from", "to"} {
			name, err := t.str(key)
			if err != nil {
				return nil, err
			}
			i, ok := index[name]
			if !ok {
				return nil, t.errf(key, "unknown tier %q", name)
			}
			ends[e] = i
		}
		a, b := ends[0], ends[1]
		if a == b {
			return nil, t.errf("to", "same tier as from (%q)", tiers[a].Name)
		}
		k := [2]int{min(a, b), max(a, b)}
		if j, dup := seen[k]; dup {
			return nil, t.errf("to", "%q and %q are already linked by link %d", tiers[a].Name, tiers[b].Name, j+1)
		}
		seen[k] = n
		l := DefaultLink(tiers, a, b)
		p.profile.applyDefault(&l, tiers)
		var err error
		if l.Bandwidth, err = t.numberOr("bandwidth", l.Bandwidth); err != nil {
			return nil, err
		}
		if l.ReverseBandwidth, err = t.numberOr("reverse_bandwidth", l.Bandwidth); err != nil {
			return nil, err
		}
		if l.Latency, err = t.intOr("latency", l.Latency); err != nil {
			return nil, err
		}
		if _, given := t.m["latency"]; given {
			l.ReverseLatency = l.Latency
		}
		if l.ReverseLatency, err = t.intOr("reverse_latency", l.ReverseLatency); err != nil {
			return nil, err
		}
		lanes, err := t.integer("lanes")
		if err != nil {
			return nil, err
		}
		l.Lanes = int(lanes)
		out = append(out, l)
	}
	return out, nil
}

// reachable checks that links connect every tier to the hbm tier.
func (p *parser) reachable(ts []*table, tiers []Tier, links []Link) error {
	adj := make([][]int, len(tiers))
	for _, l := range links {
		adj[l.From] = append(adj[l.From], l.To)
		adj[l.To] = append(adj[l.To], l.From)
	}
	seen := make([]bool, len(tiers))
	seen[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range adj[i] {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return ts[i].errf("", "not reachable from %q through [[link]]s", tiers[0].Name)
		}
	}
	return nil
}

func parseWorkload(t *table, seed int64, blockTokens int) (Workload, error) {
	var w Workload
	var err error
	if w.Format, err = t.str("format"); err != nil {
		return w, err
	}
	mode, err := t.str("mode")
	if err != nil {
		return w, err
	}
	w.Closed = mode == "closed"
	if w.Format == "synthetic" {
		if _, ok := t.m["trace"]; ok {
			return w, t.errf("trace", "a synthetic workload is generated from the scenario's seed, not read from a file")
		}
		g, err := parseGen(t, seed, blockTokens)
		if err != nil {
			return w, err
		}
		w.Gen = &g
		w.Trace = fmt.Sprintf("synthetic(seed=%d)", seed)
	} else {
		for _, f := range t.decl.fields {
			if _, ok := t.m[f.Name]; ok && f.Only == synthetic {
				return w, t.errf(f.Name, "only for %s", synthetic)
			}
		}
		if w.Trace, err = t.str("trace"); err != nil {
			return w, err
		}
		if w.Trace == "" {
			return w, t.errf("trace", "required (path of the trace file)")
		}
		if w.Format == "bailian" && blockTokens%16 != 0 {
			return w, t.errf("format", "bailian traces hash 16-token blocks: model.block_tokens must be a multiple of 16, got %d", blockTokens)
		}
		w.Trace = t.p.filePath(t.name, "trace", w.Trace)
		w.TraceLine = t.line("trace")
	}
	limit, err := t.integer("limit")
	if err != nil {
		return w, err
	}
	w.Limit = int(limit)
	if w.SkipBadLines, err = t.boolean("skip_bad_lines"); err != nil {
		return w, err
	}
	if w.Speedup, err = t.number("speedup"); err != nil {
		return w, err
	}
	return w, nil
}

// extraKeys are the keys of a [[policy]] entry it does not declare: the
// eviction policy's parameters.
func (t *table) extraKeys() []string {
	var out []string
	for k := range t.m {
		if t.decl.field(k) == nil {
			out = append(out, k)
		}
	}
	return out
}

func (p *parser) parsePolicies(ts []*table, tiers []Tier) ([]Policy, error) {
	if len(ts) == 0 {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, "policy"), Msg: "missing [[policy]]: at least one policy is required"}
	}
	if len(ts) > MaxPolicies {
		return nil, ts[MaxPolicies].errf("", "too many policies: at most %d", MaxPolicies)
	}
	out := make([]Policy, len(ts))
	seen := map[string]int{}
	for i, t := range ts {
		var pol Policy
		var err error
		if pol.Name, err = t.str("name"); err != nil {
			return nil, err
		}
		_, named := t.m["name"]
		if named {
			if strings.TrimSpace(pol.Name) == "" {
				return nil, t.errf("name", "must not be empty")
			}
			t.label = fmt.Sprintf("policy %q", pol.Name)
		}
		if _, ok := t.m["eviction"]; !ok {
			// A misspelt "eviction" is likelier than a missing one.
			if extra := t.extraKeys(); len(extra) > 0 {
				k := t.byLine(extra)[0]
				return nil, &Error{Path: p.path, Line: t.line(k), Msg: fmt.Sprintf("unknown key %q in [[policy]]", k)}
			}
			return nil, t.errf("eviction", "required (known: %s)", strings.Join(policy.Names(), ", "))
		}
		if pol.Evictions, err = t.evictions(tiers); err != nil {
			return nil, err
		}
		pol.Eviction = renderEvictions(pol.Evictions, tiers)
		if !named {
			if strings.Contains(pol.Eviction, "=") {
				return nil, t.errf("name", "required when tiers differ in eviction (%s): it labels the results and --set", pol.Eviction)
			}
			pol.Name = pol.Eviction
			t.label = fmt.Sprintf("policy %q", pol.Name)
		}
		if j, dup := seen[pol.Name]; dup {
			return nil, t.errf("name", "duplicate policy name (policy %d has it too); give each [[policy]] its own name", j+1)
		}
		seen[pol.Name] = i
		for _, f := range []struct {
			key string
			dst *string
		}{{"admission", &pol.Admission}, {"promotion", &pol.Promotion}, {"write", &pol.Write}, {"prefetch", &pol.Prefetch}, {"recompute", &pol.Recompute}, {"stage", &pol.Stage}} {
			if _, ok := t.m[f.key]; ok { // the declared default stands for "" (core's default)
				if *f.dst, err = t.str(f.key); err != nil {
					return nil, err
				}
			}
		}
		if pol.PrefetchTimeout, err = t.integer("prefetch_timeout"); err != nil {
			return nil, err
		}
		if pol.Strategy, err = strategy(t, &pol); err != nil {
			return nil, err
		}
		pol.Params = map[string]float64{}
		var takes []string // the parameters of the tiers' policies
		for _, e := range pol.Evictions {
			spec, _ := policy.Lookup(e)
			for _, k := range param.Names(spec.Params) {
				if !slices.Contains(takes, k) {
					takes = append(takes, k)
				}
			}
		}
		for _, k := range t.byLine(t.extraKeys()) { // file order: the first problem is the one shown
			if !slices.Contains(takes, k) {
				what := "takes no parameters"
				if len(takes) > 0 {
					what = "takes " + strings.Join(takes, ", ")
				}
				return nil, &Error{Path: p.path, Line: t.line(k), Msg: fmt.Sprintf("unknown key %q in [[policy]] %q (eviction %q %s)", k, pol.Name, pol.Eviction, what)}
			}
			if pol.Params[k], err = t.param(k); err != nil {
				return nil, err
			}
		}
		out[i] = pol
	}
	return out, nil
}

// evictions reads the eviction key: one policy name for every tier, or an
// inline table by tier name with an optional "default" entry.
func (t *table) evictions(tiers []Tier) ([]string, error) {
	known := func(name string) error {
		if _, ok := policy.Lookup(name); !ok {
			return fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(policy.Names(), ", "))
		}
		return nil
	}
	out := make([]string, len(tiers))
	switch v := t.m["eviction"].(type) {
	case string:
		if err := known(v); err != nil {
			return nil, t.errf("eviction", "%v", err)
		}
		for i := range out {
			out[i] = v
		}
		return out, nil
	case map[string]any:
		names := make([]string, len(tiers))
		for i, tr := range tiers {
			names[i] = tr.Name
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		bad := func(k, format string, args ...any) error {
			return t.errf("eviction", "%s: %s", k, fmt.Sprintf(format, args...))
		}
		for _, k := range keys {
			if k != "default" && !slices.Contains(names, k) {
				return nil, bad(k, "unknown tier %q (tiers: %s; or default)", k, strings.Join(names, ", "))
			}
			name, ok := v[k].(string)
			if !ok {
				return nil, bad(k, "must be a policy name, got %s", describe(v[k]))
			}
			if err := known(name); err != nil {
				return nil, bad(k, "%v", err)
			}
		}
		for i, n := range names {
			e, ok := v[n].(string)
			if !ok {
				if e, ok = v["default"].(string); !ok {
					return nil, t.errf("eviction", "no policy for tier %q: name it in the table or add default = \"...\"", n)
				}
			}
			out[i] = e
		}
		return out, nil
	}
	return nil, t.errf("eviction", `must be a policy name or a table of them by tier name ({ hbm = "lru", ssd = "fifo" }), got %s`, describe(t.m["eviction"]))
}

// renderEvictions is Policy.Eviction: the one name when every tier runs
// it, else "tier=name" in tier order, comma-separated.
func renderEvictions(ev []string, tiers []Tier) string {
	same := true
	for _, e := range ev {
		same = same && e == ev[0]
	}
	if same && len(ev) > 0 {
		return ev[0]
	}
	parts := make([]string, len(ev))
	for i, e := range ev {
		parts[i] = tiers[i].Name + "=" + e
	}
	return strings.Join(parts, ",")
}

// TierEviction is the eviction policy of tier i.
func (p *Policy) TierEviction(i int) string {
	if i < len(p.Evictions) {
		return p.Evictions[i]
	}
	return p.Eviction // a Policy built by hand, one name
}

// TierParams are the parameters tier i's policy declares: all of Params
// when every tier runs one policy (policy.New then checks them), else
// those of Params its policy takes.
func (p *Policy) TierParams(i int) map[string]float64 {
	name := p.TierEviction(i)
	if name == p.Eviction {
		return p.Params
	}
	spec, _ := policy.Lookup(name)
	out := map[string]float64{}
	for k, v := range p.Params {
		if param.Find(spec.Params, k) != nil {
			out[k] = v
		}
	}
	return out
}

// Offline reports whether any tier's policy needs the trace's future
// (policy.Offline).
func (p *Policy) Offline() bool {
	if len(p.Evictions) == 0 {
		return policy.Offline(p.Eviction)
	}
	return slices.ContainsFunc(p.Evictions, policy.Offline)
}

// Describe is a short multi-line summary for reports.
func (s *Scenario) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %q", s.Name)
	if s.Path != "" {
		fmt.Fprintf(&b, " (%s)", s.Path)
	}
	fmt.Fprintf(&b, ", seed %d\n", s.Seed)
	m := s.Model
	b.WriteString("model: ")
	if m.Preset != "" {
		b.WriteString(m.Preset + ", ")
	}
	fmt.Fprintf(&b, "%d layers x %d kv heads x head_dim %d, %s: %s/token, %s per %d-token block",
		m.Layers, m.KVHeads, m.HeadDim, m.DType, FormatBytes(m.BytesPerToken()), FormatBytes(m.BytesPerBlock()), m.BlockTokens)
	if m.Heads > 0 {
		fmt.Fprintf(&b, ", %d query heads", m.Heads)
	}
	if m.Params > 0 {
		fmt.Fprintf(&b, ", %.3g parameters", m.Params)
	}
	b.WriteByte('\n')
	g := s.GPU
	fmt.Fprintf(&b, "gpu: %s engine", g.Engine)
	if g.Engine == "batched" {
		fmt.Fprintf(&b, " (%d tokens per step)", g.MaxBatchedTokens)
	}
	fmt.Fprintf(&b, ", %d running requests at most", g.MaxSeqs)
	if g.HBMFree == "evict" {
		b.WriteString(", evicted HBM free at once")
	}
	if g.Preset != "" || g.HBMCapacity > 0 || g.PeakTFLOPs > 0 || g.HBMBandwidth > 0 {
		b.WriteString(", ")
		if g.TP > 1 {
			fmt.Fprintf(&b, "%d x ", g.TP)
		}
		if g.Preset != "" {
			b.WriteString(g.Preset + " ")
		}
		var figs []string
		if g.PeakTFLOPs > 0 {
			figs = append(figs, fmt.Sprintf("%g TFLOP/s", g.PeakTFLOPs))
		}
		if g.HBMBandwidth > 0 {
			figs = append(figs, FormatBandwidth(g.HBMBandwidth))
		}
		if g.HBMCapacity > 0 {
			figs = append(figs, FormatBytes(g.HBMCapacity))
		}
		fmt.Fprintf(&b, "(%s)", strings.Join(figs, ", "))
	}
	b.WriteByte('\n')
	switch {
	case g.Engine == "simple":
		fmt.Fprintf(&b, "steps: prefill %g tok/s, decode %g tok/s per request, attention %g ns/token^2, %s loading\n",
			g.PrefillTokensPerSec, g.DecodeTokensPerSec, g.AttentionNsPerToken2, g.Load)
	case g.StepModel == "roofline":
		fmt.Fprintf(&b, "steps: roofline, %g of peak FLOP/s, %g of HBM bandwidth, %s overhead\n",
			g.ComputeEff, g.MemoryEff, FormatDuration(g.StepOverhead))
	default:
		fmt.Fprintf(&b, "steps: linear, %s + %s/prefill token + %s/decoding sequence + %s/context token + %g ns/token^2",
			FormatFineDuration(g.C0), FormatFineDuration(g.CPrefill), FormatFineDuration(g.CDecode), FormatFineDuration(g.CCtx), g.AttentionNsPerToken2)
		if g.LegacyStep {
			fmt.Fprintf(&b, " (from prefill %g tok/s, decode %g tok/s)", g.PrefillTokensPerSec, g.DecodeTokensPerSec)
		}
		b.WriteByte('\n')
	}
	b.WriteString("tiers:\n")
	for _, t := range s.Tiers {
		fmt.Fprintf(&b, "  %-12s %-12s %10s  %10s  %7s  $%g/GB", t.Name, t.Kind, FormatBytes(t.Capacity), FormatBandwidth(t.Bandwidth), FormatDuration(t.Latency), t.CostPerGB)
		if t.Shared {
			b.WriteString("  (bandwidth shared by all its links)")
		}
		if t.Scope == ScopeCluster {
			b.WriteString("  (cluster-scoped: each node's share of one pool)")
		}
		b.WriteString("\n")
	}
	b.WriteString("links:")
	if s.Profile != "" {
		fmt.Fprintf(&b, " (defaults from hardware profile %s)", s.Profile)
	}
	b.WriteString("\n")
	for _, l := range s.Links {
		fmt.Fprintf(&b, "  %s <-> %s: %s", s.Tiers[l.From].Name, s.Tiers[l.To].Name, FormatBandwidth(l.Bandwidth))
		if l.ReverseBandwidth != l.Bandwidth {
			fmt.Fprintf(&b, " (back %s)", FormatBandwidth(l.ReverseBandwidth))
		}
		fmt.Fprintf(&b, ", %s", FormatDuration(l.Latency))
		if l.ReverseLatency != l.Latency {
			fmt.Fprintf(&b, " (back %s)", FormatDuration(l.ReverseLatency))
		}
		if l.Lanes != 1 {
			fmt.Fprintf(&b, ", %d lanes", l.Lanes)
		}
		b.WriteByte('\n')
	}
	w := s.Workload
	fmt.Fprintf(&b, "trace: %s (%s", w.Trace, w.Format)
	if w.Limit > 0 {
		fmt.Fprintf(&b, ", first %d requests", w.Limit)
	}
	if w.SkipBadLines {
		b.WriteString(", skipping bad lines")
	}
	if w.Speedup != 1 {
		fmt.Fprintf(&b, ", arrivals at %gx speed", w.Speedup)
	}
	if in := w.Inject; in != nil {
		which := "requests without ids"
		if in.Replace {
			which = "every request"
		}
		fmt.Fprintf(&b, ", block ids injected into %s: system_tokens=%d", which, in.SystemTokens)
		if in.Tenants > 0 {
			fmt.Fprintf(&b, " tenants=%d tenant_tokens=%d tenant_zipf=%g", in.Tenants, in.TenantTokens, in.TenantZipf)
		}
		fmt.Fprintf(&b, " session_continue=%g sessions=%d session_gap=%d seed=%d", in.SessionContinue, in.Sessions, in.SessionGap, s.Seed)
	}
	b.WriteString(")\npolicies:")
	for i, p := range s.Policies {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s", p.Name)
		var extra []string
		if p.Name != p.Eviction {
			extra = append(extra, p.Eviction)
		}
		keys := make([]string, 0, len(p.Params))
		for k := range p.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			extra = append(extra, fmt.Sprintf("%s=%g", k, p.Params[k]))
		}
		for _, kv := range [][2]string{{"admission", p.Admission}, {"promotion", p.Promotion}, {"write", p.Write}, {"prefetch", p.Prefetch}, {"recompute", p.Recompute}, {"stage", p.Stage}} {
			if kv[1] != "" {
				extra = append(extra, kv[0]+"="+kv[1])
			}
		}
		if p.PrefetchTimeout != 0 {
			extra = append(extra, "prefetch_timeout="+FormatDuration(p.PrefetchTimeout))
		}
		if len(extra) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(extra, " "))
		}
	}
	b.WriteByte('\n')
	if s.SLO.Set() {
		var t []string
		if s.SLO.TTFTms > 0 {
			t = append(t, fmt.Sprintf("TTFT <= %g ms", s.SLO.TTFTms))
		}
		if s.SLO.TPOTms > 0 {
			t = append(t, fmt.Sprintf("TPOT <= %g ms", s.SLO.TPOTms))
		}
		fmt.Fprintf(&b, "slo: %s\n", strings.Join(t, ", "))
	}
	if c := s.Cluster; c.Instances > 0 {
		fmt.Fprintf(&b, "cluster: %d instances", c.Instances)
		if c.Prefill > 0 {
			fmt.Fprintf(&b, " (%d prefill, %d decode)", c.Prefill, c.Instances-c.Prefill)
		}
		if i := s.Pool(); i >= 0 {
			t := s.Tiers[i]
			fmt.Fprintf(&b, ", tier %q pooled (%d x %s)", t.Name, c.Instances, FormatBytes(t.Capacity))
		}
		if c.Prefill > 0 || s.Pool() >= 0 {
			fmt.Fprintf(&b, ", NICs %s each way, %s, %d lanes", FormatBandwidth(c.NICBandwidth), FormatDuration(c.NICLatency), c.NICLanes)
		}
		fmt.Fprintf(&b, ", router %s%s\n", c.Router, routerKeys(c))
	}
	if len(s.Sets) > 0 {
		fmt.Fprintf(&b, "overrides: %s\n", strings.Join(s.Sets, ", "))
	}
	return b.String()
}

// strategy reads the strategy keys with the core's own parsers, so that a
// loaded policy carries the values the core runs with.
func strategy(t *table, pol *Policy) (core.Strategy, error) {
	st := core.Strategy{PrefetchTimeout: pol.PrefetchTimeout}
	var err error
	if st.AdmitAfter, err = core.ParseAdmission(pol.Admission); err != nil {
		return st, t.errf("admission", "%v", err)
	}
	if st.WriteThrough, err = core.ParseWrite(pol.Write); err != nil {
		return st, t.errf("write", "%v", err)
	}
	if st.Promotion, err = core.ParsePromotion(pol.Promotion); err != nil {
		return st, t.errf("promotion", "%v", err)
	}
	if st.RecomputeWhenCheaper, err = core.ParseRecompute(pol.Recompute); err != nil {
		return st, t.errf("recompute", "%v", err)
	}
	if st.Prefetch, err = core.ParsePrefetch(pol.Prefetch); err != nil {
		return st, t.errf("prefetch", "%v", err)
	}
	if st.Stage, err = core.ParseStage(pol.Stage); err != nil {
		return st, t.errf("stage", "%v", err)
	}
	if st.Prefetch == core.PrefetchTimeout && pol.PrefetchTimeout <= 0 {
		return st, t.errf("prefetch", "\"timeout\" needs prefetch_timeout > 0")
	}
	return st, nil
}

// genKeys are the synthetic workload's integer keys and where they go.
func genKeys(g *trace.GenConfig) []struct {
	key string
	dst *int
} {
	return []struct {
		key string
		dst *int
	}{{"requests", &g.Requests}, {"system_tokens", &g.SystemPromptTokens}, {"user_tokens", &g.MeanUserTokens},
		{"output_tokens", &g.MeanOutputTokens}, {"max_context", &g.MaxContextTokens}}
}

// parseGen reads the generator settings of a synthetic workload; defaults
// are trace.DefaultGenConfig's, the seed is the scenario's.
func parseGen(t *table, seed int64, blockTokens int) (trace.GenConfig, error) {
	g := trace.DefaultGenConfig()
	g.Seed, g.BlockTokens = seed, blockTokens
	for _, f := range genKeys(&g) {
		v, err := t.intOr(f.key, int64(*f.dst))
		if err != nil {
			return g, err
		}
		*f.dst = int(v)
	}
	var err error
	if g.RatePerSec, err = t.numberOr("rate", g.RatePerSec); err != nil {
		return g, err
	}
	if g.MeanTurns, err = t.numberOr("turns", g.MeanTurns); err != nil {
		return g, err
	}
	think, err := t.intOr("think", int64(g.MeanThinkSec*1e9))
	if err != nil {
		return g, err
	}
	g.MeanThinkSec = float64(think) / 1e9
	if err := g.Validate(); err != nil {
		return g, t.errf("format", "synthetic: %v", err)
	}
	return g, nil
}

// routerKeys describes the router's own keys: " (k=v ...)", a true
// boolean by its name, a false one left out; "" for none.
func routerKeys(c Cluster) string {
	var parts []string
	for _, r := range cluster.Routers() {
		if r.Name != c.Router {
			continue
		}
		for _, k := range r.Keys {
			switch v := c.Get(k.Name).(type) {
			case bool:
				if v {
					parts = append(parts, k.Name)
				}
			case float64:
				parts = append(parts, fmt.Sprintf("%s=%g", k.Name, v))
			default:
				parts = append(parts, fmt.Sprintf("%s=%v", k.Name, v))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, " ") + ")"
}
