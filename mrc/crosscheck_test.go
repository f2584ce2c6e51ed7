package mrc

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"kvsim/internal/testenv"
)

type reference struct {
	Variants string `json:"variants"`
	Results  []struct {
		Algo       string  `json:"algo"`
		SizeBlocks int     `json:"size_blocks"`
		Accesses   int64   `json:"accesses"`
		MissRatio  float64 `json:"miss_ratio"`
	} `json:"results"`
}

// refAlgo maps libCacheSim's names to kvsim's, with the tolerance each
// is held to.
var refAlgo = map[string]struct {
	name string
	tol  float64
}{
	"LRU":             {"lru", 0.001},
	"FIFO":            {"fifo", 0.001},
	"LFU":             {"lfu", 0.001},
	"Sieve":           {"sieve", 0.001},
	"Belady":          {"belady", 0.001},
	"ARC":             {"arc", 0.001},
	"S3FIFO-0.1000-2": {"s3fifo", 0.001},
}

func loadReference(t *testing.T) *reference {
	refFile := testenv.Reference(t, "conversation_libcachesim.json")
	b, err := os.ReadFile(refFile)
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatalf("%s: %v", refFile, err)
	}
	return &ref
}

func TestCrossCheckLibCacheSim(t *testing.T) {
	ref := loadReference(t)
	tr := conversation(t)
	for _, r := range ref.Results {
		m, ok := refAlgo[r.Algo]
		if !ok {
			t.Errorf("reference algorithm %q has no kvsim mapping", r.Algo)
			continue
		}
		sp, err := ParseSpec(m.name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Simulate(context.Background(), tr, sp, r.SizeBlocks)
		if err != nil {
			t.Fatal(err)
		}
		if c.Accesses != r.Accesses {
			t.Errorf("%s: %d accesses, reference %d", r.Algo, c.Accesses, r.Accesses)
		}
		got := float64(c.Misses(BlockMode)) / float64(c.Accesses)
		t.Logf("%-16s %6d  kvsim %.4f  ref %.4f  diff %+.4f", r.Algo, r.SizeBlocks, got, r.MissRatio, got-r.MissRatio)
		if math.Abs(got-r.MissRatio) > m.tol {
			t.Errorf("%s at %d blocks: miss ratio %.4f, reference %.4f (tolerance %.3f)", r.Algo, r.SizeBlocks, got, r.MissRatio, m.tol)
		}
	}
}
