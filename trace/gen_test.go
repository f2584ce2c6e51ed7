package trace

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"kvsim/internal/golden"
)

// tinyConfig is small enough to read in a golden file.
func tinyConfig() GenConfig {
	return GenConfig{
		Seed:               7,
		Requests:           12,
		BlockTokens:        16,
		SystemPromptTokens: 40,
		RatePerSec:         2,
		MeanTurns:          3,
		MeanUserTokens:     20,
		MeanOutputTokens:   10,
		MeanThinkSec:       2,
		MaxContextTokens:   200,
	}
}

func TestGenerateGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Generate(&b, tinyConfig()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/gen_tiny.jsonl", b.Bytes())
}

func TestGenerateDeterministic(t *testing.T) {
	gen := func(c GenConfig) []byte {
		var b bytes.Buffer
		if err := Generate(&b, c); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	c := DefaultGenConfig()
	a, b := gen(c), gen(c)
	if !bytes.Equal(a, b) {
		t.Fatal("same config, different output")
	}
	c.Requests = 700
	if short := gen(c); !bytes.HasPrefix(a, short) {
		t.Fatal("a shorter trace is not a prefix of a longer one")
	}
	c = DefaultGenConfig()
	c.Seed++
	if bytes.Equal(a, gen(c)) {
		t.Fatal("different seeds, same output")
	}
	c.Requests = 0
	if out := gen(c); len(out) != 0 {
		t.Fatalf("0 requests wrote %q", out)
	}
}

// TestGenerateInvariants reads generated traces back and checks the
// chained-prefix structure conversation by conversation.
func TestGenerateInvariants(t *testing.T) {
	short := DefaultGenConfig()
	short.MaxContextTokens = 8000 // exercise conversations ending early
	aligned := tinyConfig()
	aligned.SystemPromptTokens = 48 // a whole number of blocks
	aligned.Requests = 500
	for name, c := range map[string]GenConfig{"default": DefaultGenConfig(), "tiny": tinyConfig(), "short context": short, "aligned system": aligned} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			var convOf []int
			if err := generate(&buf, c, func(conv int) { convOf = append(convOf, conv) }); err != nil {
				t.Fatal(err)
			}
			bt := c.BlockTokens
			sys := c.SystemPromptTokens / bt
			// The reader checks len(hash_ids) == ceil(input/bt) and sorted timestamps.
			r := NewReader(&buf, name, Options{BlockTokens: bt})
			type turn struct {
				input, output int
				ids           []int64
			}
			last := map[int]turn{}
			owner := map[int64]int{} // non-system id -> conversation
			maxID := int64(sys - 1)
			var req Request
			n := 0
			for ; ; n++ {
				err := r.Next(&req)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if req.InputTokens > c.MaxContextTokens || req.OutputTokens < 1 {
					t.Fatalf("line %d: input %d output %d", req.Line, req.InputTokens, req.OutputTokens)
				}
				for i := range min(sys, len(req.HashIDs)) {
					if req.HashIDs[i] != int64(i) {
						t.Fatalf("line %d: system block %d has id %d", req.Line, i, req.HashIDs[i])
					}
				}
				cv := convOf[n]
				prev, seen := last[cv]
				shared := 0
				if seen {
					if req.InputTokens <= prev.input+prev.output {
						t.Fatalf("line %d: input %d does not extend the previous turn (%d+%d)", req.Line, req.InputTokens, prev.input, prev.output)
					}
					shared = prev.input / bt
					if !slices.Equal(req.HashIDs[:shared], prev.ids[:shared]) {
						t.Fatalf("line %d: full blocks of the previous turn not reused", req.Line)
					}
				} else {
					shared = sys
				}
				for i, h := range req.HashIDs {
					if h < int64(sys) {
						continue
					}
					if o, ok := owner[h]; ok && o != cv {
						t.Fatalf("line %d: id %d shared across conversations", req.Line, h)
					}
					owner[h] = cv
					if i >= shared {
						// Everything past the reused prefix is new, numbered in order.
						if h != maxID+1 {
							t.Fatalf("line %d: block %d has id %d, want new id %d", req.Line, i, h, maxID+1)
						}
						maxID = h
					}
				}
				last[cv] = turn{req.InputTokens, req.OutputTokens, slices.Clone(req.HashIDs)}
			}
			if n != c.Requests || len(convOf) != n {
				t.Fatalf("%d lines, %d hook calls, want %d", n, len(convOf), c.Requests)
			}
		})
	}
}

// TestDefaultWorkload pins the shape promised in DefaultGenConfig's comment.
func TestDefaultWorkload(t *testing.T) {
	var buf bytes.Buffer
	if err := Generate(&buf, DefaultGenConfig()); err != nil {
		t.Fatal(err)
	}
	s, err := statsOf(NewReader(&buf, "default", Options{}))
	if err != nil {
		t.Fatal(err)
	}
	rate := float64(s.Requests) / s.Duration.Seconds()
	meanIn := float64(s.InputTokens) / float64(s.Requests)
	t.Logf("%+v reuse %.3f, %.2f req/s, mean input %.0f", s, s.Reuse(), rate, meanIn)
	if s.Requests != 2000 || rate < 5 || rate > 10 || meanIn < 3000 || meanIn > 12000 || s.Reuse() < 0.4 || s.Reuse() > 0.6 {
		t.Fatal("default workload out of its intended shape")
	}
}

func TestGenConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		mod  func(*GenConfig)
		want string
	}{
		{func(c *GenConfig) { c.Requests = -1 }, "requests must be >= 0"},
		{func(c *GenConfig) { c.BlockTokens = 0 }, "block tokens must be > 0"},
		{func(c *GenConfig) { c.SystemPromptTokens = -1 }, "system prompt tokens must be >= 0"},
		{func(c *GenConfig) { c.RatePerSec = 0 }, "rate must be > 0"},
		{func(c *GenConfig) { c.MeanTurns = 0.5 }, "mean turns must be >= 1"},
		// 1e300 turns hung drawing the first conversation's length.
		{func(c *GenConfig) { c.MeanTurns = 1e300 }, "mean turns must be <= 10000 (max_context ends conversations long before)"},
		// Timestamps wrapped to negative values before.
		{func(c *GenConfig) { c.RatePerSec = 1e-300 }, "arrivals pass the simulated-time limit of 146.1 years after 3 requests: raise the rate or shorten think"},
		{func(c *GenConfig) { c.MeanThinkSec, c.RatePerSec = 1e13, 1e-9 }, "arrivals pass the simulated-time limit of 146.1 years after 7 requests: raise the rate or shorten think"},
		{func(c *GenConfig) { c.MeanUserTokens = 0 }, "mean user tokens must be >= 1"},
		{func(c *GenConfig) { c.MeanOutputTokens = 0 }, "mean output tokens must be >= 1"},
		{func(c *GenConfig) { c.MeanThinkSec = -1 }, "mean think time must be >= 0"},
		{func(c *GenConfig) { c.MaxContextTokens = c.SystemPromptTokens }, "max context tokens must exceed the system prompt"},
	} {
		c := DefaultGenConfig()
		tt.mod(&c)
		if err := Generate(io.Discard, c); err == nil || err.Error() != tt.want {
			t.Errorf("got %v, want %s", err, tt.want)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := Generate(io.Discard, DefaultGenConfig()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGenerateAzure: the Azure form of a generated trace reads back, with
// the azure reader, as the same requests as its Mooncake form less the
// block ids.
func TestGenerateAzure(t *testing.T) {
	c := DefaultGenConfig()
	c.Requests = 300
	var mc, az bytes.Buffer
	if err := Generate(&mc, c); err != nil {
		t.Fatal(err)
	}
	if err := GenerateAzure(&az, c); err != nil {
		t.Fatal(err)
	}
	a := NewReader(&mc, "mc", Options{})
	b := NewReader(&az, "az", Options{Format: "azure"})
	n := 0
	for {
		var x, y Request
		ea, eb := a.Next(&x), b.Next(&y)
		if ea == io.EOF && eb == io.EOF {
			break
		}
		if ea != nil || eb != nil {
			t.Fatalf("request %d: %v, %v", n, ea, eb)
		}
		if x.Arrival != y.Arrival || x.InputTokens != y.InputTokens || x.OutputTokens != y.OutputTokens || len(y.HashIDs) != 0 {
			t.Fatalf("request %d: mooncake %+v, azure %+v", n, x, y)
		}
		n++
	}
	if n != c.Requests {
		t.Fatalf("%d requests, want %d", n, c.Requests)
	}
}
