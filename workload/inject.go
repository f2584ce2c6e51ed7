package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"kvsim/trace"
)

// Inject is the layered prefix model that gives block ids to the requests
// of a trace without them (Azure, BurstGPT: token counts only). A prompt
// of input_length tokens is, in order:
//
//  1. the global system prompt, SystemTokens long, shared by every request;
//  2. its tenant's prefix, TenantTokens long: one of Tenants application
//     prompts, chosen with Zipf skew TenantZipf (tenant k with weight
//     1/(k+1)^TenantZipf) when the session opens;
//  3. the session's history: with probability SessionContinue a request
//     continues one of the Sessions open sessions (drawn at random among
//     those whose history is shorter than its prompt and that are ready,
//     the longest history of a few draws; after each turn a session waits
//     an exponential number of requests of mean SessionGap, as a user
//     reads the reply and types), so its prompt starts with that session's previous prompt and
//     reply, as a chat turn does; otherwise it opens a new session, which
//     replaces the oldest open one once Sessions are open;
//  4. new tokens, up to input_length.
//
// A prompt shorter than the layers above it is their first input_length
// tokens. Ids follow the chained-prefix convention of Mooncake's traces:
// a block's id names it with everything before it, so blocks of the system
// prompt and of a tenant prefix are shared by every request that holds
// them whole (or cut at the same token), a session's full blocks keep their
// ids from turn to turn, and every other block is new. The ids depend only
// on the order and token counts of the requests and on the seed.
type Inject struct {
	Replace         bool    // also give new ids to requests that have them (default: only to those without)
	SystemTokens    int     // global system prompt
	Tenants         int     // tenant prefixes; 0: none
	TenantTokens    int     // tokens of each tenant prefix
	TenantZipf      float64 // skew of the tenant choice; 0: uniform
	SessionContinue float64 // probability a request continues an open session
	Sessions        int     // open sessions a request may continue
	SessionGap      int     // mean requests a session waits before it may continue
}

// Bounds of the Inject parameters.
const (
	MaxInjectTenants  = 1 << 20
	MaxInjectSessions = 1 << 20
	MaxInjectZipf     = 10.0
	MaxInjectGap      = 1 << 30
)

// DefaultInject is the model with no layer at all but fresh blocks: every
// request's blocks are its own. Scenarios start from it.
func DefaultInject() Inject { return Inject{TenantZipf: 1, Sessions: 64} }

// Validate reports the first parameter out of range, naming its
// [workload.inject] key.
func (c Inject) Validate() error {
	switch {
	case c.SystemTokens < 0 || c.SystemTokens > trace.MaxTokens:
		return fmt.Errorf("system_tokens: must be in 0..%d", trace.MaxTokens)
	case c.Tenants < 0 || c.Tenants > MaxInjectTenants:
		return fmt.Errorf("tenants: must be in 0..%d", MaxInjectTenants)
	case c.TenantTokens < 0 || c.TenantTokens > trace.MaxTokens:
		return fmt.Errorf("tenant_tokens: must be in 0..%d", trace.MaxTokens)
	case c.TenantTokens > 0 && c.Tenants == 0:
		return errors.New("tenant_tokens: needs tenants >= 1")
	case !(c.TenantZipf >= 0 && c.TenantZipf <= MaxInjectZipf):
		return fmt.Errorf("tenant_zipf: must be in 0..%g", MaxInjectZipf)
	case !(c.SessionContinue >= 0 && c.SessionContinue <= 1):
		return errors.New("session_continue: must be in 0..1 (a probability)")
	case c.Sessions < 1 || c.Sessions > MaxInjectSessions:
		return fmt.Errorf("sessions: must be in 1..%d", MaxInjectSessions)
	case c.SessionGap < 0 || c.SessionGap > MaxInjectGap:
		return fmt.Errorf("session_gap: must be in 0..%d", MaxInjectGap)
	}
	return nil
}

// session is one open session: its tenant, its history in tokens (the
// last prompt and its reply) and the ids of the last prompt's full blocks.
type session struct {
	tenant int
	ctx    int
	ready  int64 // the request after which it may continue
	full   []int64
}

// pickTries bounds the draws for a session whose history fits a prompt,
// so that a request costs O(1) whatever the pool.
const pickTries = 8

// Injector gives requests block ids by the Inject model. It is not safe
// for concurrent use; give every pass over a trace its own.
type Injector struct {
	c      Inject
	bt     int
	salt   uint64
	rng    *rand.Rand
	cdf    []float64 // tenants' cumulative weights
	pool   []session
	next   uint64 // fresh blocks handed out
	n      int64  // requests given ids
	oldest int    // the pool's oldest session, once it is full
	ids    []int64
}

// NewInjector returns an injector for blocks of blockTokens tokens (the
// model's, as the trace is read with), drawing from seed.
func NewInjector(c Inject, seed int64, blockTokens int) (*Injector, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if blockTokens <= 0 {
		blockTokens = trace.DefaultBlockTokens
	}
	in := &Injector{c: c, bt: blockTokens, salt: mix(uint64(seed) ^ 0x696e6a656374), // "inject"
		rng: rand.New(rand.NewPCG(uint64(seed), 0x696e6a656374))}
	if c.Tenants > 0 {
		in.cdf = make([]float64, c.Tenants)
		sum := 0.0
		for k := range in.cdf {
			sum += math.Pow(float64(k+1), -c.TenantZipf)
			in.cdf[k] = sum
		}
		for k := range in.cdf {
			in.cdf[k] /= sum
		}
	}
	return in, nil
}

// Applies reports whether Apply gives q new ids.
func (in *Injector) Applies(q *trace.Request) bool { return in.c.Replace || len(q.HashIDs) == 0 }

// Apply gives q its block ids (ceil(input_length / block tokens) of them)
// unless it has some and Replace is off. q.HashIDs then points into the
// injector's buffer, valid until the next call.
func (in *Injector) Apply(q *trace.Request) {
	if !in.Applies(q) {
		return
	}
	in.ids = in.Blocks(in.ids[:0], q.InputTokens, q.OutputTokens)
	q.HashIDs = in.ids
}

// Blocks appends the ids of the next request, of input prompt tokens and
// output reply tokens, to dst.
func (in *Injector) Blocks(dst []int64, input, output int) []int64 {
	c, bt := &in.c, in.bt
	s := in.choose(input)
	nb := input / bt
	if input%bt != 0 {
		nb++
	}
	keep := min(len(s.full), nb) // the previous prompt's full blocks: unchanged
	start := len(dst)
	dst = append(dst, s.full[:keep]...)
	sys, ten := c.SystemTokens, c.SystemTokens+c.TenantTokens
	for i := keep; i < nb; i++ {
		hi := min(input, (i+1)*bt)
		n := uint64(hi - i*bt) // tokens in the block: a cut block is other content
		var id uint64
		switch {
		case hi <= sys:
			id = in.hash(1, 0, uint64(i), n)
		case hi <= ten:
			id = in.hash(2, uint64(s.tenant), uint64(i), n)
		default:
			id = in.hash(3, in.next, 0, 0)
			in.next++
		}
		dst = append(dst, int64(id&math.MaxInt64))
	}
	s.full = append(s.full[:0], dst[start:start+input/bt]...)
	s.ctx, s.ready = input+output, in.n
	if c.SessionGap > 0 {
		s.ready += int64(math.Round(in.rng.ExpFloat64() * float64(c.SessionGap)))
	}
	in.n++
	return dst
}

// choose returns the session the next prompt of input tokens belongs to:
// an open one it continues, or a new one.
func (in *Injector) choose(input int) *session {
	c := &in.c
	if len(in.pool) > 0 && c.SessionContinue > 0 && in.rng.Float64() < c.SessionContinue {
		var best *session
		for range pickTries {
			s := &in.pool[in.rng.IntN(len(in.pool))]
			if s.ctx < input && in.n > s.ready && (best == nil || s.ctx > best.ctx) {
				best = s
			}
		}
		if best != nil {
			return best
		}
	}
	t := 0
	if len(in.cdf) > 0 {
		t = sort.SearchFloat64s(in.cdf, in.rng.Float64())
		t = min(t, len(in.cdf)-1)
	}
	var s *session
	if len(in.pool) < c.Sessions {
		in.pool = append(in.pool, session{})
		s = &in.pool[len(in.pool)-1]
	} else {
		s = &in.pool[in.oldest] // the oldest session closes
		in.oldest = (in.oldest + 1) % len(in.pool)
	}
	s.tenant, s.ctx, s.full = t, 0, s.full[:0]
	return s
}

// hash names a block: its layer, group, position and token count, salted
// by the seed.
func (in *Injector) hash(layer, group, pos, n uint64) uint64 {
	h := mix(in.salt ^ layer)
	h = mix(h ^ group)
	h = mix(h ^ pos)
	return mix(h ^ n)
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
