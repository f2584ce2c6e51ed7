package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/trace"
)

// ReadTraceData and Stats: what kvsim trace stats reports, as a library;
// an injector from a file gives the requests new ids; bad input is an
// *InputError naming the file (and line).
func TestTraceStats(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.jsonl")
	body := `{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}
{"timestamp": 500, "input_length": 1536, "output_length": 20, "hash_ids": [1, 2, 3]}
{"timestamp": 1000, "input_length": 512, "output_length": 30, "hash_ids": [4]}
`
	if err := os.WriteFile(tr, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := ReadTraceData(ctx, tr, trace.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Stats(tr, "mooncake", trace.DefaultBlockTokens)
	if s.Requests != 3 || s.BlockAccesses != 6 || s.DistinctBlocks != 4 || s.Reuses != 2 ||
		s.InputTokens.Max != 1536 || s.InjectedRequests != 0 {
		t.Errorf("stats %+v", s)
	}
	in := filepath.Join(dir, "in.toml")
	if err := os.WriteFile(in, []byte("[workload.inject]\nreplace = true\nsystem_tokens = 512\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inj, err := LoadInjector(in, 1, trace.DefaultBlockTokens)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = ReadTraceData(ctx, tr, trace.Options{}, inj); err != nil || d.Injected != 3 || d.IDs[0] == 1 {
		t.Errorf("injected: %d requests, ids %v, %v", d.Injected, d.IDs, err)
	}
	if err := os.WriteFile(in, []byte("[workload.inject]\nsessions = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ie *InputError
	if _, err := LoadInjector(in, 1, 512); !errors.As(err, &ie) || !strings.Contains(err.Error(), "in.toml:2: workload.inject: sessions: must be >= 1") {
		t.Errorf("bad table: %v", err)
	}
	if err := os.WriteFile(tr, []byte(body+"{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var le *trace.LineError
	if _, err := ReadTraceData(ctx, tr, trace.Options{}, nil); !errors.As(err, &ie) || !errors.As(err, &le) || !strings.Contains(err.Error(), "t.jsonl:4:") {
		t.Errorf("bad line: %v", err)
	}
	if _, err := ReadTraceData(ctx, filepath.Join(dir, "none"), trace.Options{}, nil); !errors.As(err, &ie) || !strings.Contains(err.Error(), "none: no such file") {
		t.Errorf("missing: %v", err)
	}
}

// A binary trace (kvsim trace convert) gives the same statistics as its
// source: stats read traces as run and mrc do.
func TestTraceStatsBinary(t *testing.T) {
	src := filepath.Join("..", "traces", "synthetic.jsonl")
	bin := filepath.Join(t.TempDir(), "s.bin")
	if err := trace.Convert(src, bin, trace.Options{BlockTokens: 16}); err != nil {
		t.Fatal(err)
	}
	var got [2]*TraceStats
	for i, p := range []string{src, bin} {
		d, err := ReadTraceData(context.Background(), p, trace.Options{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got[i] = d.Stats("x", "mooncake", trace.DefaultBlockTokens)
	}
	a, _ := json.Marshal(got[0])
	b, _ := json.Marshal(got[1])
	if string(a) != string(b) || got[0].Requests != 2000 {
		t.Errorf("source %s\nbinary %s", a, b)
	}
}
