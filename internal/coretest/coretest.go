// Package coretest holds what tests of several packages need to drive a
// core by hand: a Mover that queues its prefill and decode commands, a
// request source over a slice, and random conversation-shaped requests.
// Only test files import it.
package coretest

import (
	"io"
	"math/rand/v2"
	"testing"

	"kvsim/core"
	"kvsim/policy"
)

// Driver is a Mover that queues the core's prefill and decode commands for
// the test to complete; moves are ignored and drops counted per tier. The
// embedded Mover (nil) stands for methods these tests never trigger.
type Driver struct {
	core.Mover
	Prefills, Decodes []core.ReqID
	Drops             map[int]int // per tier
}

func (d *Driver) Move(int64, core.ReqID, core.Block, int64, int, int, core.MoveKind) {}
func (d *Driver) Drop(_ int64, _ core.Block, t int)                                  { d.Drops[t]++ }
func (d *Driver) Prefill(_ int64, id core.ReqID, _, _ int)                           { d.Prefills = append(d.Prefills, id) }
func (d *Driver) Decode(_ int64, id core.ReqID, _ int)                               { d.Decodes = append(d.Decodes, id) }
func (d *Driver) Wake(int64, core.ReqID)                                             {}

// Finish completes every request the core started, in order, at now (each
// completion may admit queued requests, which are finished too).
func (d *Driver) Finish(c *core.Core, now int64) {
	for len(d.Prefills) > 0 || len(d.Decodes) > 0 {
		if len(d.Prefills) > 0 {
			id := d.Prefills[0]
			d.Prefills = d.Prefills[1:]
			c.PrefillDone(now, id, core.Timing{})
			continue
		}
		id := d.Decodes[0]
		d.Decodes = d.Decodes[1:]
		c.DecodeDone(now, id)
	}
}

// NewCore is a core of 1-byte tokens in 10-token blocks over tiers, driven
// by a Driver.
func NewCore(t testing.TB, tiers []core.Tier, pol func(tier int, capacity int64) (policy.Policy, error)) (*core.Core, *Driver) {
	t.Helper()
	d := &Driver{Drops: map[int]int{}}
	c, err := core.New(core.Config{Tiers: tiers, BytesPerToken: 1, BlockTokens: 10, NewPolicy: pol}, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, d
}

// Slice is a core.Source over requests.
type Slice struct {
	Reqs []core.Request
	i    int
}

func (s *Slice) Next(r *core.Request) error {
	if s.i >= len(s.Reqs) {
		return io.EOF
	}
	*r = s.Reqs[s.i]
	s.i++
	return nil
}

// Conversations are n random requests of 4-token blocks: each extends one
// of six conversations' prefixes by 1-8 blocks, arrivals up to 4 us apart,
// up to 39 output tokens.
func Conversations(rng *rand.Rand, n int) []core.Request {
	var reqs []core.Request
	var t int64
	for i := range n {
		t += int64(rng.IntN(4000))
		conv := rng.IntN(6)
		k := 1 + rng.IntN(8)
		var blocks []core.Block
		for j := range k {
			blocks = append(blocks, core.Block(conv*100+j))
		}
		reqs = append(reqs, core.Request{Seq: int64(i), Arrival: t, InputTokens: 4*k - rng.IntN(4),
			OutputTokens: rng.IntN(40), Blocks: blocks})
	}
	return reqs
}
