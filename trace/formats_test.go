package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/internal/golden"
)

// dump reads r to the end: one line per request with every field, then
// the error or "EOF" and the skipped count.
func dump(r *Reader) string {
	var b strings.Builder
	var q Request
	for {
		err := r.Next(&q)
		if err != nil {
			if err == io.EOF {
				fmt.Fprintf(&b, "EOF skipped=%d\n", r.Skipped())
			} else {
				fmt.Fprintf(&b, "error: %v\n", err)
			}
			return b.String()
		}
		fmt.Fprintf(&b, "line=%d at=%d in=%d out=%d parent=%d think=%d ids=%v\n",
			q.Line, q.Arrival, q.InputTokens, q.OutputTokens, q.Parent, q.Think, q.HashIDs)
	}
}

func dumpFile(t *testing.T, path string, opt Options) string {
	t.Helper()
	r, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return dump(r)
}

var formatCases = []struct {
	file, golden string
	opt          Options
}{
	{"mooncake_sessions.jsonl", "mooncake_sessions.golden", Options{}},
	{"bailian_tiny.jsonl", "bailian_16.golden", Options{Format: "bailian", BlockTokens: 16}},
	{"bailian_tiny.jsonl", "bailian_32.golden", Options{Format: "bailian", BlockTokens: 32}},
	{"azure_tiny.csv", "azure_tiny.golden", Options{Format: "azure"}},
	{"burstgpt_tiny.csv", "burstgpt_tiny.golden", Options{Format: "burstgpt"}},
}

// TestFormatsGolden pins the requests each format's fixture parses to.
func TestFormatsGolden(t *testing.T) {
	for _, c := range formatCases {
		got := dumpFile(t, filepath.Join("testdata", c.file), c.opt)
		golden.Check(t, filepath.Join("testdata", c.golden), []byte(got))
	}
}

// TestMooncakeSessions checks the session fields by hand: a delay is the
// think time; without one, the gap between the turns' timestamps.
func TestMooncakeSessions(t *testing.T) {
	r, err := Open("testdata/mooncake_sessions.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := []struct {
		line, parent int
		think        int64
	}{{1, 0, 0}, {2, 0, 0}, {4, 1, 250e6}, {5, 2, 2500e6}, {6, 0, 0}}
	var q Request
	for i, w := range want {
		if err := r.Next(&q); err != nil {
			t.Fatal(err)
		}
		if q.Line != w.line || q.Parent != w.parent || q.Think != w.think {
			t.Errorf("request %d: line %d parent %d think %d, want %+v", i, q.Line, q.Parent, q.Think, w)
		}
	}
	// Speedup divides think times as it divides arrivals.
	r2, _ := Open("testdata/mooncake_sessions.jsonl", Options{Speedup: 2})
	defer r2.Close()
	for range 4 {
		if err := r2.Next(&q); err != nil {
			t.Fatal(err)
		}
	}
	if q.Think != 1250e6 {
		t.Errorf("think at speedup 2: %d, want 1250e6", q.Think)
	}
}

// TestBailianChaining: the same 16-token block at two positions (or after
// two prefixes) gets two ids; the same prefix gets the same ids.
func TestBailianChaining(t *testing.T) {
	r, err := Open("testdata/bailian_tiny.jsonl", Options{Format: "bailian", BlockTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var reqs [][]int64
	var q Request
	for r.Next(&q) == nil {
		reqs = append(reqs, append([]int64(nil), q.HashIDs...))
	}
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Raw 11 is block 0 of requests 0, 1 and 3, block 1 of request 2.
	if reqs[0][0] != reqs[1][0] || reqs[0][0] != reqs[3][0] {
		t.Errorf("same first block, different ids: %v %v %v", reqs[0], reqs[1], reqs[3])
	}
	if reqs[2][1] == reqs[0][0] {
		t.Errorf("block 11 after block 99 has the id of block 11 first: %v %v", reqs[2], reqs[0])
	}
	for i := range 3 {
		if reqs[0][i] != reqs[1][i] {
			t.Errorf("shared prefix, block %d differs", i)
		}
	}
	if reqs[0][1] == reqs[0][0] || reqs[1][3] == reqs[1][4] {
		t.Errorf("ids repeat within a request: %v %v", reqs[0], reqs[1])
	}
	// 32-token blocks: pairs named by their last 16-token id, a trailing
	// single one its own block.
	r32, _ := Open("testdata/bailian_tiny.jsonl", Options{Format: "bailian", BlockTokens: 32})
	defer r32.Close()
	if err := r32.Next(&q); err != nil {
		t.Fatal(err)
	}
	if len(q.HashIDs) != 2 || q.HashIDs[0] != reqs[0][1] || q.HashIDs[1] != reqs[0][2] {
		t.Errorf("32-token blocks %v from 16-token %v", q.HashIDs, reqs[0])
	}
	if err := r32.Next(&q); err != nil {
		t.Fatal(err)
	}
	if q.Parent != 1 || q.Think != 750e6 || len(q.HashIDs) != 3 || q.HashIDs[2] != reqs[1][4] {
		t.Errorf("second request: parent %d think %d ids %v", q.Parent, q.Think, q.HashIDs)
	}
}

func TestRegroup(t *testing.T) {
	ids := []int64{1, 2, 3, 4, 5, 6, 7}
	for _, c := range []struct {
		g    int
		want string
	}{{1, "[1 2 3 4 5 6 7]"}, {2, "[2 4 6 7]"}, {3, "[3 6 7]"}, {7, "[7]"}, {8, "[7]"}} {
		if got := fmt.Sprint(regroup(nil, ids, c.g)); got != c.want {
			t.Errorf("g=%d: %s, want %s", c.g, got, c.want)
		}
	}
	if got := regroup(nil, nil, 4); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestAzureTimestamps(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		bad  string
	}{
		{"1970-01-01 00:00:00", 0, ""},
		{"2023-11-16 18:15:46.6805900", 1700158546680590000, ""},
		{"2024-05-10 00:00:00.009930+00:00", 1715299200009930000, ""},
		{"2024-05-10T02:00:00Z", 1715306400000000000, ""},
		{"2024-05-10 02:00:00+02:00", 1715299200000000000, ""},
		{"2024-02-29 00:00:00", 1709164800000000000, ""},
		{"2023-02-29 00:00:00", 0, "is not a date"},
		{"2023-11-16", 0, "is not a date"},
		{"2023-11-16 18:15:46.", 0, "is not a date"},
		{"2023-11-16 18:15:46.1234567890", 0, "is not a date"},
		{"1969-12-31 23:59:59", 0, "before 1970"},
		{"abcd-11-16 18:15:46", 0, "is not a date"},
	} {
		got, reason := parseDateTime([]byte(c.in), "TIMESTAMP")
		if c.bad != "" {
			if !strings.Contains(reason, c.bad) {
				t.Errorf("%q: %q, want %q", c.in, reason, c.bad)
			}
			continue
		}
		if reason != "" || got != c.want {
			t.Errorf("%q: %d %q, want %d", c.in, got, reason, c.want)
		}
	}
}

// TestFormatErrors: bad lines and headers are FILE:LINE errors, skipped
// lines are counted, bad options are clear errors.
func TestFormatErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, format, text, want string
	}{
		{"a.csv", "azure", "TIMESTAMP,Context,GeneratedTokens\n", `a.csv:1: azure trace: no column "ContextTokens" in the header`},
		{"b.csv", "azure", "\nTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n2023-11-16 18:15:45,1,1\n", "b.csv:4: timestamp goes backwards"},
		{"c.csv", "azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,-1,1\n", "c.csv:2: negative ContextTokens"},
		{"d.csv", "azure", "GeneratedTokens,TIMESTAMP,ContextTokens\n1,2023-11-16 18:15:46,x\n", "d.csv:2: ContextTokens is not an integer"},
		{"e.csv", "burstgpt", "Timestamp,Model,Request tokens,Response tokens\n1,m,2\n", "e.csv:2: 3 fields, the header has 4"},
		{"f.csv", "burstgpt", "Timestamp,Model,Request tokens\n", `f.csv:1: burstgpt trace: no column "Response tokens"`},
		{"g.csv", "burstgpt", "Timestamp,Request tokens,Response tokens\n-1,2,3\n", "g.csv:2: negative Timestamp"},
		{"h.csv", "burstgpt", "Timestamp,Request tokens,Response tokens\n1,2147483648,3\n", "h.csv:2: Request tokens out of range"},
		{"i.jsonl", "bailian", `{"timestamp": 1, "input_length": 17, "output_length": 1, "hash_ids": [1, 2]}`, `i.jsonl:1: missing field "chat_id"`},
		{"j.jsonl", "bailian", `{"chat_id": 1, "timestamp": 1, "input_length": 17, "output_length": 1, "hash_ids": [1]}`, "j.jsonl:1: input_length 17 needs 2 hash_ids, got 1"},
		{"k.jsonl", "bailian", `{"chat_id": "x", "timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []}`, "k.jsonl:1: chat_id is not an integer"},
		{"l.jsonl", "mooncake", `{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": [], "session_id": [1]}`, "l.jsonl:1: session_id is not a string or an integer"},
		{"m.jsonl", "mooncake", `{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": [], "delay": -5}`, "m.jsonl:1: negative delay"},
	} {
		p := write(c.name, c.text)
		got := dumpFile(t, p, Options{Format: c.format})
		if !strings.Contains(got, c.want) || !strings.HasPrefix(strings.TrimPrefix(got[strings.Index(got, "error: "):], "error: "), p) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// A bad row is skipped with SkipBadLines; a bad header is not.
	p := write("s.csv", "Timestamp,Request tokens,Response tokens\n1,2,3\nx,2,3\n4,5,6\n")
	if got := dumpFile(t, p, Options{Format: "burstgpt", SkipBadLines: true}); !strings.HasSuffix(got, "EOF skipped=1\n") || strings.Count(got, "line=") != 2 {
		t.Errorf("skip: %s", got)
	}
	p = write("t.csv", "nothing,here\n1,2\n")
	if got := dumpFile(t, p, Options{Format: "azure", SkipBadLines: true}); !strings.Contains(got, "t.csv:1: azure trace: no column") {
		t.Errorf("skipped a bad header: %s", got)
	}
	if _, err := Open(p, Options{Format: "csv"}); err == nil || !strings.Contains(err.Error(), `unknown trace format "csv" (known: `+strings.Join(Formats(), ", ")+")") {
		t.Errorf("unknown format: %v", err)
	}
	if _, err := Open(p, Options{Format: "bailian", BlockTokens: 24}); err == nil || !strings.Contains(err.Error(), "block_tokens must be a multiple of 16, got 24") {
		t.Errorf("bailian block: %v", err)
	}
	r := NewReader(strings.NewReader(""), "x", Options{Format: "nope"})
	var q Request
	if err := r.Next(&q); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("NewReader with an unknown format: %v", err)
	}
	r = NewReader(strings.NewReader(`{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []}`), "x", Options{Format: "nope"})
	if err := r.Rewind(); err != nil {
		t.Fatal(err)
	}
	if err := r.Next(&q); err == nil || !strings.Contains(err.Error(), "unknown trace format") {
		t.Errorf("after Rewind, an unknown format reads: %v", err)
	}
}

// TestFormatsCovered: every registered format has a fixture, read with
// the defaults, and a golden of the requests it parses to.
func TestFormatsCovered(t *testing.T) {
	for i, f := range FormatSpecs() {
		if f.Name == "" || f.ID != i || f.Doc == "" || f.line == nil {
			t.Errorf("format %d: incomplete spec %+v (IDs are dense from 0)", i, f)
			continue
		}
		if f.Fixture == "" {
			t.Errorf("%s: no fixture", f.Name)
			continue
		}
		gold := filepath.Join("testdata", strings.TrimSuffix(f.Fixture, filepath.Ext(f.Fixture))+".golden")
		if f.Magic != "" {
			// Its converter sits above this package: cmd/kvsim's
			// TestKVEventsFixture reads the fixture against the golden.
			for _, p := range []string{filepath.Join("testdata", f.Fixture), gold} {
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
			}
			continue
		}
		got := dumpFile(t, filepath.Join("testdata", f.Fixture), Options{Format: f.Name})
		golden.Check(t, gold, []byte(got))
	}
}
