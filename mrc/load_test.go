package mrc

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"kvsim/trace"
)

// TestLoadBinary: a binary trace (dense ids, no dictionary) loads to the
// same Trace as its source, also when its reader skips some lines.
func TestLoadBinary(t *testing.T) {
	dir := t.TempDir()
	skip := filepath.Join(dir, "skip.jsonl")
	os.WriteFile(skip, []byte(`{"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1]}
{"timestamp": 2, "input_length": 512, "output_length": 1, "hash_ids": [2]}
{"timestamp": 3, "input_length": 1024, "output_length": 1, "hash_ids": [2, 1]}
`), 0o644)
	for _, c := range []struct {
		src string
		opt trace.Options
	}{
		{"../traces/synthetic.jsonl", trace.Options{}},
		{"../traces/synthetic.jsonl", trace.Options{Limit: 40}},
		// The first line is bad at 512 tokens a block: the lines read
		// skip dense id 0.
		{skip, trace.Options{SkipBadLines: true}},
		{"../trace/testdata/bailian_tiny.jsonl", trace.Options{Format: "bailian", BlockTokens: 16}},
		{"../trace/testdata/bailian_tiny.jsonl", trace.Options{Format: "bailian", BlockTokens: 32}},
	} {
		bin := filepath.Join(dir, filepath.Base(c.src)+".kvtc")
		if err := trace.Convert(c.src, bin, trace.Options{Format: c.opt.Format}); err != nil {
			t.Fatal(err)
		}
		want, err := LoadOptions(c.src, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := LoadOptions(bin, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %+v: binary %d refs %d distinct, source %d %d", c.src, c.opt, len(got.Blocks), got.Distinct, len(want.Blocks), want.Distinct)
		}
		if want.Requests() == 0 {
			t.Errorf("%s %+v: no requests", c.src, c.opt)
		}
	}
}
