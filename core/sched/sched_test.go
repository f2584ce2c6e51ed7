package sched

import (
	"fmt"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// body forwards the core's commands to the scheduler, as a body does; it
// has no lower tier, so no load is ever pending.
type body struct{ s *Scheduler }

func (b *body) Move(int64, core.ReqID, core.Block, int64, int, int, core.MoveKind) {}
func (b *body) Drop(int64, core.Block, int)                                        {}
func (b *body) Prefill(now int64, id core.ReqID, cached, compute int) {
	b.s.Prefill(now, id, cached, compute)
}
func (b *body) Decode(_ int64, id core.ReqID, tokens int) { b.s.Decode(id, tokens) }
func (b *body) Wake(int64, core.ReqID)                    {}
func (b *body) Preempted(_ int64, id core.ReqID)          { b.s.Preempt(id) }
func (b *body) Loading(core.ReqID) bool                   { return false }
func (b *body) TakeLoadNs(core.ReqID) int64               { return 0 }

type zero struct{}

func (zero) StepNs(*StepBatch) float64 { return 0 }

// TestStepsByHand: a budget of 8 tokens, 4-token pages. A (20 prompt
// tokens, 2 output) and B (4 prompt, 3 output) arrive together. Worked by
// hand: A's prompt takes the whole budget twice (8, 8); the third step
// finishes A (4) and, with the 4 tokens left, all of B's prompt, so both
// get their first token; the fourth decodes both (each first growing its
// output page) and A is done; the fifth decodes B, done.
func TestStepsByHand(t *testing.T) {
	b := &body{}
	s := New(b, zero{}, 8, 4)
	b.s = s
	var done []string
	c, err := core.New(core.Config{Tiers: []core.Tier{{Name: "hbm", Capacity: 1000}}, BytesPerToken: 1, BlockTokens: 4,
		NewPolicy: func(_ int, c int64) (policy.Policy, error) { return policy.New("lru", policy.Config{Capacity: c}) }},
		b, func(r *core.Record) {
			done = append(done, fmt.Sprintf("%d first %d done %d", r.Seq, r.FirstToken, r.Done))
		})
	if err != nil {
		t.Fatal(err)
	}
	s.Attach(c)
	c.Arrive(0, &core.Request{Seq: 0, InputTokens: 20, OutputTokens: 2, Blocks: []core.Block{0, 1, 2, 3, 4}})
	c.Arrive(0, &core.Request{Seq: 1, InputTokens: 4, OutputTokens: 3, Blocks: []core.Block{5}})
	var steps []string
	for now := int64(1000); ; now += 1000 {
		bt, ok := s.Next(now - 1000)
		if !ok {
			break
		}
		steps = append(steps, fmt.Sprintf("P%d/%d D%d", bt.PrefillTokens, bt.PrefillSeqs, bt.DecodeSeqs))
		s.Done(now)
	}
	if got, want := strings.Join(steps, ", "), "P8/1 D0, P8/1 D0, P8/2 D0, P0/0 D2, P0/0 D1"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if got, want := strings.Join(done, "; "), "0 first 3000 done 4000; 1 first 3000 done 5000"; got != want {
		t.Errorf("records %s, want %s", got, want)
	}
	if s.PendingPrefillTokens() != 0 || s.Busy() || len(s.Running()) != 0 || c.Running() != 0 {
		t.Errorf("left: %d prefill tokens, busy %v, %d running, core %d", s.PendingPrefillTokens(), s.Busy(), len(s.Running()), c.Running())
	}
}
