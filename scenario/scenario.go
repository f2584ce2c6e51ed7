package scenario

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"kvsim/core"
	"kvsim/internal/tomlguard"
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
	if s.Policies, err = p.parsePolicies(policies, s.Tiers, s.Workload.Closed); err != nil {
		return err
	}
	if slo := tables["slo"][0]; slo != nil {
		if s.SLO, err = parseSLO(slo); err != nil {
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
