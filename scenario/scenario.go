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

	"kvsim/core"
	"kvsim/policy"
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
	Sets     []string // --set overrides applied, as given
}

// Model is the KV geometry of the served model.
type Model struct {
	Layers      int
	KVHeads     int    // key kv_heads
	HeadDim     int    // key head_dim
	DType       string // fp32, bf16 (default), fp16, fp8, int8
	BlockTokens int    // key block_tokens; default 512, Mooncake's block
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

// GPU is the compute model.
type GPU struct {
	PrefillTokensPerSec  float64 // key prefill_tokens_per_s; default 20000
	AttentionNsPerToken2 float64 // key attention_ns_per_token2: quadratic attention cost; default 0
	DecodeTokensPerSec   float64 // key decode_tokens_per_s, per running request; default 50
	Load                 string  // key load: "layerwise" (default, loads overlap compute layer by layer) or "serial"
}

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
	Trace        string  // absolute, or joined to the scenario file's directory
	Format       string  // "mooncake" (default)
	Limit        int     // requests to read; 0 = all
	SkipBadLines bool    // key skip_bad_lines
	Speedup      float64 // arrival times are divided by it; default 1
	// Gen is set for format = "synthetic": the trace is generated, in
	// memory, from the scenario's seed (Trace then only labels it).
	Gen *trace.GenConfig
}

// Policy is one [[policy]] entry: an eviction strategy and its knobs.
type Policy struct {
	Name     string // label in results; default Eviction
	Eviction string // a policy.Names() entry
	Params   map[string]float64

	// Reserved for strategies beyond eviction; "" / 0 mean the default.
	Admission       string
	Promotion       string
	Write           string
	Prefetch        string
	Recompute       string // "never" (default) or "when-cheaper"
	PrefetchTimeout int64  // ns; key prefetch_timeout

	// Strategy is the above as the core reads them, parsed and checked at
	// load. Left out of JSON: it only restates the strings (kvsim's run_id
	// hashes the scenario's JSON and must not change with it).
	Strategy core.Strategy `json:"-"`
}

// Kinds lists the tier kinds in hierarchy order.
func Kinds() []string { return []string{"hbm", "pinned", "dram", "ssd", "nvmeof", "remote_dram"} }

// kindDefaults follow the background document's table (section 1).
var kindDefaults = map[string]Tier{
	"hbm":         {Kind: "hbm", Capacity: 60 << 30, Bandwidth: 2e12, Latency: 100, CostPerGB: 20},
	"pinned":      {Kind: "pinned", Capacity: 64 << 30, Bandwidth: 25e9, Latency: 100, CostPerGB: 5},
	"dram":        {Kind: "dram", Capacity: 512 << 30, Bandwidth: 50e9, Latency: 100, CostPerGB: 5},
	"ssd":         {Kind: "ssd", Capacity: 3_840_000_000_000, Bandwidth: 7e9, Latency: 10_000, CostPerGB: 0.3},
	"nvmeof":      {Kind: "nvmeof", Capacity: 15_360_000_000_000, Bandwidth: 6e9, Latency: 20_000, CostPerGB: 0.1},
	"remote_dram": {Kind: "remote_dram", Capacity: 1 << 40, Bandwidth: 50e9, Latency: 3_000, CostPerGB: 5},
}

// KindDefaults returns the defaults of a tier kind (Name is empty).
func KindDefaults(kind string) (Tier, bool) {
	t, ok := kindDefaults[kind]
	return t, ok
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
func Formats() []string { return []string{"mooncake", "synthetic"} }

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
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		return nil, &Error{Path: path, Msg: msg, Err: err}
	}
	return ParseWith(data, path, sets)
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
	if err := applySets(p, root, sets); err != nil {
		return nil, err
	}
	s := &Scenario{Path: path, Sets: sets}
	if err := p.parse(root, s); err != nil {
		return nil, blameSet(data, path, sets, err)
	}
	return s, nil
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
	if s.GPU, err = parseGPU(gpu); err != nil {
		return err
	}
	if s.Tiers, err = p.parseTiers(tiers); err != nil {
		return err
	}
	if _, ok := root["profile"]; ok {
		name, err := top.str("profile")
		if err != nil {
			return err
		}
		if p.profile, err = LoadProfile(resolve(p.file, name)); err != nil {
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
	if s.Policies, err = p.parsePolicies(policies); err != nil {
		return err
	}
	return nil
}

// maxDim bounds model dimensions so that byte counts cannot overflow.
const maxDim = 1 << 24

func parseModel(t *table) (Model, error) {
	var m Model
	for _, d := range []struct {
		key string
		dst *int
	}{{"layers", &m.Layers}, {"kv_heads", &m.KVHeads}, {"head_dim", &m.HeadDim}, {"block_tokens", &m.BlockTokens}} {
		n, err := t.integer(d.key)
		if err != nil {
			return m, err
		}
		*d.dst = int(n)
		if d.key == "head_dim" {
			if m.DType, err = t.str("dtype"); err != nil {
				return m, err
			}
		}
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

func parseGPU(t *table) (GPU, error) {
	if t == nil {
		t = &table{decl: sectionNamed("gpu")} // every key at its default
	}
	var g GPU
	var err error
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
	return g, nil
}

func (p *parser) parseTiers(ts []*table) ([]Tier, error) {
	if len(ts) == 0 {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, "tier"), Msg: "missing [[tier]]: at least one tier (the hbm tier) is required"}
	}
	if len(ts) > core.MaxTiers {
		return nil, ts[core.MaxTiers].errf("", "too many tiers: at most %d", core.MaxTiers)
	}
	out := make([]Tier, len(ts))
	seen := map[string]int{}
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
		def := kindDefaults[kind]
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
		out[i] = tier
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
			if _, ok := t.m[f.key]; ok && f.only == synthetic {
				return w, t.errf(f.key, "only for %s", synthetic)
			}
		}
		if w.Trace, err = t.str("trace"); err != nil {
			return w, err
		}
		if w.Trace == "" {
			return w, t.errf("trace", "required (path of the trace file)")
		}
		if !filepath.IsAbs(w.Trace) {
			w.Trace = filepath.Join(filepath.Dir(t.p.file), w.Trace)
		}
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

func (p *parser) parsePolicies(ts []*table) ([]Policy, error) {
	if len(ts) == 0 {
		return nil, &Error{Path: p.path, Line: p.lines.line("", 0, "policy"), Msg: "missing [[policy]]: at least one policy is required"}
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
		if pol.Eviction, err = t.str("eviction"); err != nil {
			return nil, err
		}
		spec, ok := policy.Lookup(pol.Eviction)
		if !ok {
			return nil, t.errf("eviction", "unknown policy %q (known: %s)", pol.Eviction, strings.Join(policy.Names(), ", "))
		}
		if !named {
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
		}{{"admission", &pol.Admission}, {"promotion", &pol.Promotion}, {"write", &pol.Write}, {"prefetch", &pol.Prefetch}, {"recompute", &pol.Recompute}} {
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
		for _, k := range t.byLine(t.extraKeys()) { // file order: the first problem is the one shown
			if !slices.Contains(spec.Params, k) {
				takes := "takes no parameters"
				if len(spec.Params) > 0 {
					takes = "takes " + strings.Join(spec.Params, ", ")
				}
				return nil, &Error{Path: p.path, Line: t.line(k), Msg: fmt.Sprintf("unknown key %q in [[policy]] %q (eviction %q %s)", k, pol.Name, pol.Eviction, takes)}
			}
			if pol.Params[k], err = t.param(k); err != nil {
				return nil, err
			}
		}
		out[i] = pol
	}
	return out, nil
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
	fmt.Fprintf(&b, "model: %d layers x %d kv heads x head_dim %d, %s: %s/token, %s per %d-token block\n",
		m.Layers, m.KVHeads, m.HeadDim, m.DType, FormatBytes(m.BytesPerToken()), FormatBytes(m.BytesPerBlock()), m.BlockTokens)
	g := s.GPU
	fmt.Fprintf(&b, "gpu: prefill %g tok/s, decode %g tok/s per request, attention %g ns/token^2, %s loading\n",
		g.PrefillTokensPerSec, g.DecodeTokensPerSec, g.AttentionNsPerToken2, g.Load)
	b.WriteString("tiers:\n")
	for _, t := range s.Tiers {
		fmt.Fprintf(&b, "  %-12s %-12s %10s  %10s  %7s  $%g/GB", t.Name, t.Kind, FormatBytes(t.Capacity), FormatBandwidth(t.Bandwidth), FormatDuration(t.Latency), t.CostPerGB)
		if t.Shared {
			b.WriteString("  (bandwidth shared by all its links)")
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
		for _, kv := range [][2]string{{"admission", p.Admission}, {"promotion", p.Promotion}, {"write", p.Write}, {"prefetch", p.Prefetch}, {"recompute", p.Recompute}} {
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
