package cluster

import (
	"io"
	"testing"

	"kvsim/core"
	"kvsim/sim"
)

// sessionsTest is a closed-loop source: roots at their times, and
// follows[i] the requests following request i, think ns after it.
type sessionsTest struct {
	roots   []core.Request
	follows map[int64][]core.Request
	think   int64
	n       int
	out     []core.Request
	done    map[int64]int64 // when each request was reported finished
}

func (s *sessionsTest) Next(r *core.Request) error {
	if s.n == len(s.roots) {
		return io.EOF
	}
	*r = s.roots[s.n]
	s.n++
	return nil
}

func (s *sessionsTest) Follow(seq, done int64) ([]core.Request, error) {
	s.done[seq] = done
	s.out = s.out[:0]
	for _, q := range s.follows[seq] {
		q.Arrival = done + s.think
		s.out = append(s.out, q)
	}
	return s.out, nil
}

// TestClosedLoopByHand: a session's second turn (blocks 0 1 2, 12 tokens)
// follows its first (blocks 0 1, 8 tokens) 5 us after the first finishes.
// The first prefills in one step (1080 ns) and, with 1 output token, is
// done then: the second arrives at 6080, finds blocks 0 and 1 in HBM and
// computes block 2 in one step (1040 ns). With 11 output tokens the first
// decodes 10 more steps of 1100 ns, done at 12080: the slow first turn
// delays the second to 17080, with the same TTFT. Round robin sends the
// second turn to the other instance: it computes all 12 tokens, 1080 +
// 1040 ns.
func TestClosedLoopByHand(t *testing.T) {
	for _, tc := range []struct {
		out0           int
		router         Router
		arrival1, ttft int64
		inst1          int
	}{
		{1, &prefixTest{}, 6080, 1040, 0},
		{11, &prefixTest{}, 17080, 1040, 0},
		{11, &rrTest{}, 17080, 2120, 1},
	} {
		src := &sessionsTest{
			roots:   []core.Request{{Seq: 0, Arrival: 0, InputTokens: 8, OutputTokens: tc.out0, Blocks: []core.Block{0, 1}}},
			follows: map[int64][]core.Request{0: {{Seq: 1, Arrival: 999, InputTokens: 12, OutputTokens: 1, Blocks: []core.Block{0, 1, 2}}}},
			think:   5000, done: map[int64]int64{},
		}
		var recs []instRec
		_, err := Run(src, Config{Instances: []sim.Config{tinyNode(), tinyNode()}, Router: tc.router}, func(inst int, r *core.Record) {
			recs = append(recs, instRec{inst, *r})
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 || recs[1].rec.Seq != 1 {
			t.Fatalf("%d output tokens: records %+v", tc.out0, recs)
		}
		r1 := recs[1]
		if r1.rec.Arrival != tc.arrival1 || r1.rec.TTFT() != tc.ttft || r1.inst != tc.inst1 || src.done[0] != tc.arrival1-5000 {
			t.Fatalf("%d output tokens, %s: second turn on %d arrived %d, TTFT %d; want %d on %d, TTFT %d (first done %d)",
				tc.out0, tc.router.Name(), r1.inst, r1.rec.Arrival, r1.rec.TTFT(), tc.arrival1, tc.inst1, tc.ttft, src.done[0])
		}
	}
}
