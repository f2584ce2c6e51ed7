package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
)

// drain lists what a reader yields, error included, as text.
func drain(r *Reader) []string {
	var out []string
	var q Request
	for {
		err := r.Next(&q)
		if err == io.EOF {
			break
		}
		if err != nil {
			return append(out, "error: "+err.Error())
		}
		out = append(out, fmt.Sprintf("%d %d %d %d %v", q.Line, q.Arrival, q.InputTokens, q.OutputTokens, q.HashIDs))
	}
	first := ""
	if e := r.FirstSkipped(); e != nil {
		first = e.Error()
	}
	return append(out, fmt.Sprintf("skipped %d %s", r.Skipped(), first))
}

// TestGeneratedIsParsedGenerate pins the direct stream to the JSON round
// trip it replaced: for many seeds and settings, Generated yields exactly
// what NewReader over Generate's bytes does, with the same options.
func TestGeneratedIsParsedGenerate(t *testing.T) {
	huge := GenConfig{Requests: 30, BlockTokens: 1 << 30, RatePerSec: 1, MeanTurns: 3, MeanUserTokens: 1 << 29,
		MeanOutputTokens: 1 << 28, MeanThinkSec: 1, MaxContextTokens: 1 << 40}
	opts := []Options{{}, {BlockTokens: 16}, {BlockTokens: 16, Speedup: 3}, {BlockTokens: 16, Speedup: 0.37, Limit: 7},
		{BlockTokens: 32, SkipBadLines: true}, {BlockTokens: 1 << 30, SkipBadLines: true}}
	for seed := int64(0); seed < 60; seed++ {
		cs := []GenConfig{tinyConfig(), DefaultGenConfig(), huge}
		cs[1].Requests = 300
		for i := range cs {
			cs[i].Seed = seed
			if seed%3 == 1 {
				cs[i].MeanThinkSec = 0.0004 // sub-ms gaps round to equal timestamps
			}
		}
		for ci, c := range cs {
			var b bytes.Buffer
			if err := Generate(&b, c); err != nil {
				t.Fatal(err)
			}
			for oi, o := range opts {
				if ci != 1 && o.BlockTokens == 0 {
					o.BlockTokens = c.BlockTokens
				}
				want := drain(NewReader(bytes.NewReader(b.Bytes()), "s.jsonl", o))
				got := drain(Generated(context.Background(), c, "s.jsonl", o))
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d config %d options %d: Generated differs from parsing Generate:\n got %q\nwant %q",
						seed, ci, oi, got, want)
				}
			}
		}
	}
}

func TestGeneratedErrors(t *testing.T) {
	// Past the simulated-time limit: Generate's error, after the requests
	// that fit.
	c := tinyConfig()
	c.RatePerSec = 1e-12
	gerr := Generate(io.Discard, c)
	if gerr == nil {
		t.Fatal("Generate accepted arrivals past the time limit")
	}
	got := drain(Generated(context.Background(), c, "s", Options{BlockTokens: c.BlockTokens}))
	if last := got[len(got)-1]; last != "error: synthetic: "+gerr.Error() {
		t.Fatalf("last = %q, want the generator's error %q", last, gerr)
	}
	// A bad config fails the first Next.
	c = tinyConfig()
	c.RatePerSec = 0
	if got := drain(Generated(context.Background(), c, "s", Options{})); len(got) != 1 || got[0] != "error: synthetic: rate must be > 0" {
		t.Fatalf("bad config: %q", got)
	}
	// A cancelled context stops a long generation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c = DefaultGenConfig()
	c.Requests = 10000
	r := Generated(ctx, c, "s", Options{})
	var q Request
	var err error
	n := 0
	for ; err == nil; n++ {
		err = r.Next(&q)
	}
	if !errors.Is(err, context.Canceled) || n > 4096 {
		t.Fatalf("after cancel: %v after %d requests", err, n)
	}
	// Rewind restarts the same stream.
	r = Generated(context.Background(), tinyConfig(), "s", Options{BlockTokens: 16})
	a := drain(r)
	if err := r.Rewind(); err != nil {
		t.Fatal(err)
	}
	if b := drain(r); !slices.Equal(a, b) {
		t.Fatalf("after Rewind:\n%q\nwant\n%q", b, a)
	}
	r.Close()
	if err := r.Rewind(); err == nil {
		t.Fatal("Rewind after Close succeeded")
	}
}
