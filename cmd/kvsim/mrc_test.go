package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kvsim/internal/testenv"
	"kvsim/policy"
)

// mrcCLI runs "kvsim mrc args..." in-process: stdout, stderr, exit status.
func mrcCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"mrc"}, args...), &out, &errb)
	code := exitCode(err, &errb) // prints the error
	return out.String(), errb.String(), code
}

// mrcTrace writes a small Mooncake trace: 3 requests over 10 distinct
// blocks (ids 0-9), 13 references.
func mrcTrace(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "small.jsonl")
	lines := `{"timestamp": 0, "input_length": 2048, "output_length": 10, "hash_ids": [0, 1, 2, 3]}
{"timestamp": 5, "input_length": 2560, "output_length": 10, "hash_ids": [0, 1, 4, 5, 6]}
{"timestamp": 9, "input_length": 2048, "output_length": 10, "hash_ids": [0, 7, 8, 9]}
`
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type mrcRow struct {
	Policy     string  `json:"policy"`
	SizeBlocks int     `json:"size_blocks"`
	Accesses   int64   `json:"accesses"`
	Misses     int64   `json:"misses"`
	MissRatio  float64 `json:"miss_ratio"`
}

func TestMrcJSON(t *testing.T) {
	out, errs, code := mrcCLI("--trace", mrcTrace(t), "--policies", "lru,fifo,belady", "--sizes", "2,50%", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{"accesses", "miss_ratio", "misses", "policy", "size_blocks"}
	for _, r := range raw {
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
	}
	var rows []mrcRow
	json.Unmarshal([]byte(out), &rows)
	// Hand-checked. References 0 1 2 3 | 0 1 4 5 6 | 0 7 8 9. With 2 blocks
	// LRU and FIFO keep nothing long enough. With 5, LRU hits 0, 1 and 0
	// again; FIFO evicts 0 (oldest) for 5 and misses it in request 3.
	// Belady with 2 must still insert 2 and 3 (never used again): 1 goes
	// for 2, so only block 0's two reuses hit.
	wantRows := []mrcRow{
		{"lru", 2, 13, 13, 1}, {"lru", 5, 13, 10, 10.0 / 13},
		{"fifo", 2, 13, 13, 1}, {"fifo", 5, 13, 11, 11.0 / 13},
		{"belady", 2, 13, 11, 11.0 / 13}, {"belady", 5, 13, 10, 10.0 / 13},
	}
	if !slices.Equal(rows, wantRows) {
		t.Fatalf("got %+v\nwant %+v", rows, wantRows)
	}
}

func TestMrcPrefixMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "p.jsonl")
	os.WriteFile(p, []byte(`{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [3]}
{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [4, 2]}
`), 0o644)
	block, _, _ := mrcCLI("--trace", p, "--policies", "lru", "--sizes", "4", "--json")
	prefix, _, _ := mrcCLI("--trace", p, "--policies", "lru", "--sizes", "4", "--json", "--mode", "prefix")
	var b, q []mrcRow
	json.Unmarshal([]byte(block), &b)
	json.Unmarshal([]byte(prefix), &q)
	// Block 2 hits in request 3, but behind a miss (block 4).
	if len(b) != 1 || len(q) != 1 || b[0].Misses != 4 || q[0].Misses != 5 {
		t.Fatalf("block %+v, prefix %+v", b, q)
	}
}

func TestMrcTable(t *testing.T) {
	out, errs, code := mrcCLI("--trace", mrcTrace(t), "--policies", "s3fifo:small_fraction=0.5,lru-stack", "--sizes", "10%,3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.Contains(lines[0], "3 requests, 13 references, 10 distinct blocks; block mode") ||
		strings.Fields(lines[1])[0] != "policy" {
		t.Fatalf("output:\n%s", out)
	}
	if f := strings.Fields(lines[2]); f[0] != "s3fifo:small_fraction=0.5" || f[1] != "1" {
		t.Fatalf("row %q", lines[2])
	}
	if f := strings.Fields(lines[5]); f[0] != "lru-stack" || f[1] != "3" || f[2] != "13" {
		t.Fatalf("row %q", lines[5])
	}
}

func TestMrcBench(t *testing.T) {
	out, errs, code := mrcCLI("--trace", mrcTrace(t), "--policies", "lru,belady,lru-stack", "--sizes", "3", "--bench", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, r := range rows {
		for _, k := range []string{"policy", "size_blocks", "accesses_per_sec", "allocs_per_access", "miss_ratio"} {
			if _, ok := r[k]; !ok {
				t.Errorf("bench row lacks %q: %v", k, r)
			}
		}
	}
	out, _, code = mrcCLI("--trace", mrcTrace(t), "--policies", "lru", "--sizes", "3", "--bench")
	if code != 0 || !strings.Contains(out, "M accesses/s") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestMrcBadInput(t *testing.T) {
	tr := mrcTrace(t)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}`+"\n"+
		`{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1,}`+"\n"), 0o644)
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	htmlDir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", tr, "--policies", "nope", "--sizes", "1"}, `--policies: unknown eviction policy "nope"`},
		{[]string{"--trace", tr, "--policies", "lru:x=1", "--sizes", "1"}, `--policies: policy "lru" has no parameter "x"`},
		{[]string{"--trace", tr, "--policies", "s3fifo:small_fraction=2", "--sizes", "1"}, "--policies: s3fifo: small_fraction"},
		{[]string{"--trace", tr, "--policies", "", "--sizes", "1"}, "--policies: required"},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "abc"}, `--sizes: bad size "abc"`},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "0"}, `--sizes: size "0" must be > 0`},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "-5%"}, `--sizes: size "-5%" must be > 0`},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "1%"}, "--sizes: 1% of 10 distinct blocks is 0 blocks"},
		{[]string{"--trace", tr, "--policies", "lru"}, "--sizes: required"},
		{[]string{"--policies", "lru", "--sizes", "1"}, "--trace: required"},
		{[]string{"--trace", filepath.Join(t.TempDir(), "missing.jsonl"), "--policies", "lru", "--sizes", "1"}, "--trace: open "},
		{[]string{"--trace", bad, "--policies", "lru", "--sizes", "1"}, "bad.jsonl:2: invalid JSON"},
		{[]string{"--trace", tr, "--format", "csv", "--policies", "lru", "--sizes", "1"}, "--format: unknown trace format"},
		{[]string{"--trace", tr, "--mode", "tree", "--policies", "lru", "--sizes", "1"}, "--mode: want block or prefix"},
		{[]string{"--trace", tr, "--sample", "1.5", "--policies", "lru", "--sizes", "1"}, "--sample: rate must be in (0,1]"},
		{[]string{"--trace", tr, "--sample", "0.5", "--mode", "prefix", "--policies", "lru", "--sizes", "1"}, "--sample works in block mode only"},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "1", "extra"}, `unexpected argument "extra"`},
		{[]string{"--trace", tr, "--bogus"}, "flag provided but not defined"},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "1,,2"}, `--sizes: bad size ""`},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "-99999999999999999999"}, `--sizes: bad size "-99999999999999999999"`},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "NaN%"}, `--sizes: bad size "NaN%"`},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "-Inf%"}, `--sizes: size "-Inf%" must be > 0`},
		{[]string{"--trace", tr, "--policies", "s3fifo:small_fraction=NaN", "--sizes", "1"}, "small_fraction must be a finite number"},
		{[]string{"--trace", tr, "--policies", "wtinylfu:window=Inf", "--sizes", "1"}, "window must be a finite number"},
		{[]string{"--trace", tr, "--policies", "s3fifo:ghost_fraction=2", "--sizes", "1"}, "ghost_fraction must be in [0,1]"},
		{[]string{"--trace", tr, "--policies", "lru,", "--sizes", "1"}, `unknown eviction policy ""`},
		{[]string{"--trace", tr, "--sample", "NaN", "--policies", "lru", "--sizes", "1"}, "--sample: rate must be in (0,1]"},
		{[]string{"--trace", tr, "--sample", "abc", "--policies", "lru", "--sizes", "1"}, `invalid value "abc" for flag -sample`},
		{[]string{"--trace", tr, "--sample", "1e-300", "--policies", "lru", "--sizes", "1"}, "--sample: rate 1e-300 keeps none of the trace's 10 distinct blocks"},
		{[]string{"--trace", tr, "--sample", "0.5", "--bench", "--policies", "lru", "--sizes", "1"}, "--bench replays the whole trace; drop --sample"},
		{[]string{"--trace", tr, "--html", "x.html", "--bench", "--policies", "lru", "--sizes", "1"}, "--bench measures speed and draws no curve"},
		{[]string{"--trace", tr, "--mode", "", "--policies", "lru", "--sizes", "1"}, "--mode: want block or prefix"},
		{[]string{"--trace", empty, "--policies", "lru", "--sizes", "1"}, "empty.jsonl holds no blocks"},
		// The page's paths are checked before the trace is read (a bad trace
		// here is not reached), naming the user's path, never a temporary file.
		{[]string{"--trace", bad, "--policies", "lru", "--sizes", "1", "--html", htmlDir}, "--html " + htmlDir + ": is a folder; give a file name"},
		{[]string{"--trace", bad, "--policies", "lru", "--sizes", "1", "--html", filepath.Join(htmlDir, "no", "x.html")},
			"--html " + filepath.Join(htmlDir, "no", "x.html") + ": folder " + filepath.Join(htmlDir, "no") + " does not exist"},
		{[]string{"--trace", bad, "--policies", "lru", "--sizes", "1", "--html", filepath.Join(htmlDir, "x.html"), "--assets", htmlDir}, "--assets: " + filepath.Join(htmlDir, "echarts.min.js") + ": not found"},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "1", "--html", filepath.Join(htmlDir, "no", "y.html")}, // was: open .../no/.y.html.123
			"--html " + filepath.Join(htmlDir, "no", "y.html") + ": folder " + filepath.Join(htmlDir, "no") + " does not exist"},
		{[]string{"--trace", tr, "--policies", "lru", "--sizes", "1", "--assets", htmlDir}, "--assets is for the --html page"},
	} {
		_, errs, code := mrcCLI(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
		if strings.HasPrefix(errs, "kvsim: ") && strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: error is not one line: %q", c.args, errs)
		}
	}
	if ents, _ := os.ReadDir(htmlDir); len(ents) != 0 {
		t.Errorf("bad --html runs wrote %v", ents)
	}
}

// TestMrcPercentSizes: percentages resolve as the reference's sizes do,
// int(fraction × 182790), and sampling reports unscaled sizes.
func TestMrcPercentSizes(t *testing.T) {
	p := testenv.ConversationTrace(t)
	for _, extra := range [][]string{nil, {"--sample", "0.1"}} {
		args := append([]string{"--trace", p, "--policies", "lru", "--sizes", "1%,5%,10%,25%", "--json"}, extra...)
		out, errs, code := mrcCLI(args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var rows []mrcRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range rows {
			got = append(got, r.SizeBlocks)
		}
		if !slices.Equal(got, []int{1827, 9139, 18279, 45697}) {
			t.Errorf("%v: sizes %v", extra, got)
		}
		if extra == nil && (rows[0].Accesses != 288500 || rows[0].Misses != 273420) {
			t.Errorf("lru at 1%%: %+v", rows[0])
		}
	}
}

// TestMrcHTML: --html writes a chart page; --assets makes it offline.
func TestMrcHTML(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "mrc.html")
	_, stderr, code := runKvsim("mrc", "--trace", "../../traces/synthetic.jsonl", "--policies", "lru,fifo", "--sizes", "1%,10%,50%", "--html", page)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"lru", "fifo", "echarts"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	_, stderr, code = runKvsim("mrc", "--trace", "../../traces/synthetic.jsonl", "--policies", "lru", "--sizes", "10%", "--html", page, "--assets", filepath.Join(dir, "none"))
	if code != 2 || !strings.Contains(stderr, "echarts.min.js") {
		t.Errorf("bad --assets: status %d, %q", code, stderr)
	}
}

// TestMrcHugeSizes: sizes beyond the trace's distinct blocks are capped to
// them, with a warning on stderr and capped_from in --json, for every
// policy (wtinylfu sized its sketch from 9e18 and panicked).
func TestMrcHugeSizes(t *testing.T) {
	tr := mrcTrace(t) // 10 distinct blocks
	sizes := []string{"9000000000000000000", "99999999999999999999999", "11", "1e9%", "1e400%", "Inf%", "101%"}
	policies := strings.Join(append(policy.Names(), "lru-stack"), ",")
	out, errs, code := mrcCLI("--trace", tr, "--policies", policies, "--sizes", strings.Join(append(sizes, "10", "100%"), ","), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if n := strings.Count(errs, "\n"); n != len(sizes) || strings.Count(errs, "capped to 10") != len(sizes) {
		t.Errorf("want one warning per capped size (%d), got:\n%s", len(sizes), errs)
	}
	var rows []struct {
		mrcRow
		CappedFrom string `json:"capped_from"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	per := len(sizes) + 2
	if len(rows) != per*len(policy.Names())+per {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		j := i % per
		want := ""
		if j < len(sizes) {
			want = sizes[j]
		}
		exact := rows[i-j+len(sizes)] // the same policy at exactly 10 blocks
		if r.SizeBlocks != 10 || r.CappedFrom != want || r.Misses != exact.Misses || r.Accesses != 13 {
			t.Errorf("row %d: %+v (capped_from %q); want 10 blocks, capped_from %q, %d misses", i, r.mrcRow, r.CappedFrom, want, exact.Misses)
		}
	}
	// The table says so on stderr too, and --bench takes capped sizes.
	for _, extra := range [][]string{nil, {"--bench"}, {"--sample", "0.5"}} {
		args := append([]string{"--trace", tr, "--policies", "wtinylfu,arc", "--sizes", "9000000000000000000"}, extra...)
		if _, errs, code := mrcCLI(args...); code != 0 || !strings.Contains(errs, "warning: mrc: --sizes: 9000000000000000000 is more than the trace's 10 distinct blocks; capped to 10") {
			t.Errorf("%v: exit %d, stderr %q", extra, code, errs)
		}
	}
}

// TestMrcBenchMissRatioIsCurve: the miss ratio --bench prints is the
// curve's for the same policy and size (it was the warm second pass's).
func TestMrcBenchMissRatioIsCurve(t *testing.T) {
	tr := mrcTrace(t)
	policies := strings.Join(append(policy.Names(), "lru-stack"), ",")
	for _, mode := range []string{"block", "prefix"} {
		args := []string{"--trace", tr, "--policies", policies, "--sizes", "2,3,6", "--mode", mode, "--json"}
		out, errs, code := mrcCLI(args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var curve []mrcRow
		if err := json.Unmarshal([]byte(out), &curve); err != nil {
			t.Fatal(err)
		}
		out, errs, code = mrcCLI(append(args, "--bench")...)
		if code != 0 {
			t.Fatalf("bench: exit %d: %s", code, errs)
		}
		var bench []mrcRow
		if err := json.Unmarshal([]byte(out), &bench); err != nil {
			t.Fatal(err)
		}
		if len(bench) != len(curve) {
			t.Fatalf("%d bench rows, %d curve rows", len(bench), len(curve))
		}
		for i := range curve {
			c, b := curve[i], bench[i]
			if b.Policy != c.Policy || b.SizeBlocks != c.SizeBlocks || b.MissRatio != c.MissRatio {
				t.Errorf("%s mode: bench %s at %d: miss ratio %v, curve %s at %d: %v", mode, b.Policy, b.SizeBlocks, b.MissRatio, c.Policy, c.SizeBlocks, c.MissRatio)
			}
		}
	}
}

// FuzzMrcFlags: any --sizes, --sample, --policies and --mode give either a
// result (exit 0) or one line of bad input (exit 2): never a panic, an
// internal error or a hang.
func FuzzMrcFlags(f *testing.F) {
	for _, s := range [][4]string{
		{"10", "0", "lru", "block"}, {"9000000000000000000", "", "wtinylfu", "block"}, {"1e400%,1%", "0.5", "s3fifo:ghost_fraction=0.9", "block"},
		{"3,50%", "1", "arc,belady,lru-stack", "prefix"}, {"1,,2", "NaN", "lru:x=1", "tree"}, {"-1", "-0", "s3fifo:small_fraction=NaN", ""},
		{"Inf%", "1e-300", "mooncake:evict_fraction=2", "block"}, {"0x10", "0.0000001", "gdsf:cost_exponent=-1e308", "block"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	dir := f.TempDir()
	tr := filepath.Join(dir, "small.jsonl")
	if err := os.WriteFile(tr, []byte(`{"timestamp": 0, "input_length": 2048, "output_length": 10, "hash_ids": [0, 1, 2, 3]}
{"timestamp": 5, "input_length": 2560, "output_length": 10, "hash_ids": [0, 1, 4, 5, 6]}
`), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sizes, sample, policies, mode string) {
		args := []string{"--trace", tr, "--sizes", sizes, "--policies", policies, "--mode", mode, "--json"}
		if sample != "" {
			args = append(args, "--sample", sample)
		}
		_, errs, code := mrcCLI(args...)
		switch code {
		case 0:
		case 2:
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "kvsim: ") {
				t.Errorf("%q: bad input is not one line: %q", args, errs)
			}
		default:
			t.Errorf("%q: exit %d: %s", args, code, errs)
		}
	})
}
