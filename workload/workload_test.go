package workload

import (
	"io"
	"math"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/trace"
)

const tiny = `{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [70, 71]}
{"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [70, 90]}
{"timestamp": 9, "input_length": 1024, "output_length": 1, "hash_ids": [70, 71]}
`

func TestSourceAndFuture(t *testing.T) {
	src := NewSource(trace.NewReader(strings.NewReader(tiny), "tiny.jsonl", trace.Options{}), trace.NewDict())
	var r core.Request
	var got [][]core.Block
	for {
		err := src.Next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, append([]core.Block(nil), r.Blocks...))
	}
	// Dense ids in order of first appearance.
	if want := "[[0 1] [0 2] [0 1]]"; fmtBlocks(got) != want {
		t.Errorf("blocks %s, want %s", fmtBlocks(got), want)
	}
	if src.Requests != 3 || src.BlockAccesses != 6 || src.Distinct() != 3 || src.InputTokens != 2624 || src.LastArrival != 9e6 {
		t.Errorf("counts %+v distinct %d", src, src.Distinct())
	}

	f, err := BuildFuture(NewSource(trace.NewReader(strings.NewReader(tiny), "tiny.jsonl", trace.Options{}), trace.NewDict()))
	if err != nil {
		t.Fatal(err)
	}
	// Keyed by the requests' positions (Seq 0, 1, 2), not their arrivals.
	for _, c := range []struct {
		b    core.Block
		seq  int64
		want int64
	}{
		{0, -1, 0}, {0, 0, 1}, {0, 1, 2}, {0, 2, math.MaxInt64},
		{1, 0, 2}, {2, 0, 1}, {2, 1, math.MaxInt64}, {7, 0, math.MaxInt64},
	} {
		if got := f.NextUse(c.b, c.seq); got != c.want {
			t.Errorf("NextUse(%d, %d) = %d, want %d", c.b, c.seq, got, c.want)
		}
	}
}

func fmtBlocks(x [][]core.Block) string {
	var b strings.Builder
	b.WriteString("[")
	for i, r := range x {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString("[")
		for j, v := range r {
			if j > 0 {
				b.WriteString(" ")
			}
			b.WriteString(string(rune('0' + v)))
		}
		b.WriteString("]")
	}
	b.WriteString("]")
	return b.String()
}

// TestLimitsAgree: the trace reader bounds arrivals by the core's
// simulated-time limit (trace imports nothing of ours, so it keeps its own
// copy), and each request carries its trace line for error messages.
func TestLimitsAgree(t *testing.T) {
	if trace.MaxArrival != core.MaxTime {
		t.Fatalf("trace.MaxArrival %d != core.MaxTime %d", trace.MaxArrival, core.MaxTime)
	}
	src := NewSource(trace.NewReader(strings.NewReader("\n"+tiny), "tiny.jsonl", trace.Options{}), trace.NewDict())
	var r core.Request
	for _, line := range []int{2, 3, 4} {
		if err := src.Next(&r); err != nil || r.Line != line {
			t.Fatalf("line %d: %v, want line %d", r.Line, err, line)
		}
	}
}
