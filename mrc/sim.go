package mrc

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"kvsim/param"
	"kvsim/policy"
)

// Mode says how hits are counted.
type Mode int

const (
	BlockMode  Mode = iota // every reference on its own
	PrefixMode             // a reference hits only if its whole request prefix hit
)

func (m Mode) String() string {
	if m == PrefixMode {
		return "prefix"
	}
	return "block"
}

// StackLRU is the pseudo-policy name of the one-pass exact LRU curve.
const StackLRU = "lru-stack"

// Spec names a policy and its parameters, written "name" or
// "name:key=value:key=value".
type Spec struct {
	Label  string // as written
	Name   string
	Params policy.Params
}

// ParseSpec parses and checks one policy spec (name known, keys accepted).
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ":")
	sp := Spec{Label: s, Name: parts[0]}
	if sp.Name == StackLRU {
		if len(parts) > 1 {
			return sp, fmt.Errorf("%s takes no parameters", StackLRU)
		}
		return sp, nil
	}
	ps, ok := policy.Lookup(sp.Name)
	if !ok {
		return sp, fmt.Errorf("unknown eviction policy %q (known: %s)", sp.Name, strings.Join(append(policy.Names(), StackLRU), ", "))
	}
	for _, kv := range parts[1:] {
		k, v, found := strings.Cut(kv, "=")
		if !found {
			return sp, fmt.Errorf("policy %q: parameter %q is not key=value", sp.Name, kv)
		}
		if param.Find(ps.Params, k) == nil {
			return sp, fmt.Errorf("policy %q has no parameter %q (known: %s)", sp.Name, k, strings.Join(param.Names(ps.Params), ", "))
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return sp, fmt.Errorf("policy %q: parameter %s: %q is not a number", sp.Name, k, v)
		}
		if sp.Params == nil {
			sp.Params = policy.Params{}
		}
		sp.Params[k] = x
	}
	return sp, nil
}

// Check builds the policy once, so bad parameter values surface before a
// long run.
func (sp Spec) Check() error {
	if sp.Name == StackLRU {
		return nil
	}
	_, err := newPolicy(sp, 1, func() *Future { return NewFuture(&Trace{Starts: []int32{0}}) })
	return err
}

// Counts are one replay's totals.
type Counts struct {
	Accesses   int64
	Hits       int64 // block-mode hits
	PrefixHits int64 // prefix-mode hits
}

// Misses in the given mode.
func (c Counts) Misses(m Mode) int64 {
	if m == PrefixMode {
		return c.Accesses - c.PrefixHits
	}
	return c.Accesses - c.Hits
}

// newPolicy builds the policy of sp for a cache of size blocks.
func newPolicy(sp Spec, size int, fut func() *Future) (policy.Policy, error) {
	cfg := policy.Config{Capacity: int64(size), Params: sp.Params}
	if policy.Offline(sp.Name) {
		cfg.Future = fut()
	}
	return policy.New(sp.Name, cfg)
}

// sim is one cache being replayed: a policy plus the residency the driver
// owns (a []bool, not a map: it is read on every reference).
type sim struct {
	p        policy.Policy
	exp      policy.Expecter // p, if it wants to know the incoming block first
	bat      policy.Batcher  // p, if it evicts in batches (drained at once, and ahead of need)
	spare    onePin          // what an eviction ahead of need spares: the block just inserted
	resident []bool
	used     int
	capacity int
	c        Counts
}

func newSim(p policy.Policy, size, distinct int) *sim {
	exp, _ := p.(policy.Expecter)
	bat, _ := p.(policy.Batcher)
	return &sim{p: p, exp: exp, bat: bat, resident: make([]bool, distinct), capacity: size}
}

// onePin pins one block.
type onePin struct{ b policy.Block }

func (o *onePin) Pinned(b policy.Block) bool { return b == o.b }

// evict takes one victim and, from a Batcher, the rest of its batch, as
// the core does.
func (s *sim) evict(now int64, pins policy.Pinned) bool {
	for first := true; first || (s.bat != nil && s.bat.Pending()); first = false {
		v, ok := s.p.Evict(now, pins)
		if !ok {
			return !first
		}
		s.resident[v] = false
		s.used--
	}
	return true
}

// run replays requests [from, to) of t; now is the reference's position
// plus base. ctx is polled every 64Ki references.
func (s *sim) run(ctx context.Context, t *Trace, from, to int, base int64) error {
	blocks := t.Blocks
	p, res := s.p, s.resident
	poll := int32(1 << 16)
	for q := from; q < to; q++ {
		lo, hi := t.Starts[q], t.Starts[q+1]
		if hi >= poll {
			if err := ctx.Err(); err != nil {
				return err
			}
			poll = hi + 1<<16
		}
		prefix := true
		for i := lo; i < hi; i++ {
			b := blocks[i]
			now := base + int64(i)
			if res[b] {
				s.c.Hits++
				if prefix {
					s.c.PrefixHits++
				}
				p.Access(b, now)
				continue
			}
			prefix = false
			if s.exp != nil {
				s.exp.Expect(b)
			}
			for s.used >= s.capacity {
				if !s.evict(now, policy.NoPins) {
					return fmt.Errorf("policy evicted nothing from a full cache of %d blocks", s.capacity)
				}
			}
			p.Insert(b, 1, now)
			res[b] = true
			s.used++
			if s.bat != nil && s.bat.Overfull(int64(s.used), int64(s.capacity)) {
				s.spare.b = b
				s.evict(now, &s.spare)
			}
		}
		s.c.Accesses += int64(hi - lo)
	}
	return nil
}

// Simulate replays t through the policy sp with a cache of size blocks.
func Simulate(ctx context.Context, t *Trace, sp Spec, size int) (Counts, error) {
	if sp.Name == StackLRU {
		st := NewStack(t)
		return st.Counts(size), nil
	}
	p, err := newPolicy(sp, size, func() *Future { return NewFuture(t) })
	if err != nil {
		return Counts{}, err
	}
	s := newSim(p, size, t.Distinct)
	err = s.run(ctx, t, 0, t.Requests(), 0)
	return s.c, err
}
