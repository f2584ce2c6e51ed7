package experiment

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"kvsim/scenario"
)

// TestTraceFootprint, by hand: blocks of 1,000 tokens x 1,000 bytes. Block
// 1 is full (1e6 bytes); block 2 is a 500-token last block in the first
// request and a full one in the second: the larger counts (1e6); block 3
// is full (1e6), block 4 a 200-token last block (2e5). Blocks 1 and 2
// twice count once: 3.2e6 bytes. With --limit 1, the first request alone:
// 1e6 + 5e5.
func TestTraceFootprint(t *testing.T) {
	dir := t.TempDir()
	trace := `{"timestamp": 0, "input_length": 1500, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 10, "input_length": 2000, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 20, "input_length": 1200, "output_length": 1, "hash_ids": [3, 4]}
`
	sc := `name = "fp"
[model]
layers = 1
kv_heads = 1
head_dim = 250
dtype = "bf16"
block_tokens = 1000
[[tier]]
name = "hbm"
kind = "hbm"
capacity = "10MB"
[[tier]]
name = "dram"
kind = "dram"
capacity = "1MB"
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
`
	if err := os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.toml")
	if err := os.WriteFile(p, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit int
		want  int64
	}{{0, 3_200_000}, {1, 1_500_000}} {
		got, err := TraceFootprint(context.Background(), s, false, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("limit %d: footprint %d bytes, want %d", c.limit, got, c.want)
		}
	}
}
