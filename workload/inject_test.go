package workload

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"kvsim/core"
	"kvsim/trace"
)

// dense renumbers ids in order of first appearance, so that tests can pin
// the sharing structure rather than hash values.
func dense(ids []int64, starts []int32) string {
	m := map[int64]int{}
	var b strings.Builder
	for r := range len(starts) - 1 {
		if r > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('[')
		for i, h := range ids[starts[r]:starts[r+1]] {
			if _, ok := m[h]; !ok {
				m[h] = len(m)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprint(&b, m[h])
		}
		b.WriteByte(']')
	}
	return b.String()
}

// The layers, pinned on a few requests of 4-token blocks: a 6-token system
// prompt (its first block shared whole, the second cut at 6 tokens shared
// by the prompts that stop there), one 2-token tenant prefix (the rest of
// that second block), and sessions continued whenever a history fits.
func TestInjectGolden(t *testing.T) {
	shapes := []Shape{
		{Input: 14, Output: 1}, // opens session a: system, system+tenant, then its own
		{Input: 3, Output: 1},  // a's history (15) does not fit: opens b, a cut system block
		{Input: 20, Output: 3}, // continues a session
		{Input: 6, Output: 1},  // the system prompt alone
		{Input: 6, Output: 1},  // the same 6 tokens
	}
	c := Inject{SystemTokens: 6, Tenants: 1, TenantTokens: 2, TenantZipf: 1, SessionContinue: 1, Sessions: 1}
	for _, tc := range []struct {
		sessions int
		want     string
	}{
		// One open session: b closed a, so the 20-token prompt continues b,
		// whose 3 tokens filled no block: it shares only the layers.
		{1, "[0 1 2 3] [4] [0 1 5 6 7] [0 8] [0 8]"},
		// Two: it continues a (the longest history that fits) and keeps its
		// three full blocks; then b (history 4) takes the first 6-token
		// prompt and the second opens a session: both are the system prompt.
		{2, "[0 1 2 3] [4] [0 1 2 5 6] [0 7] [0 7]"},
	} {
		c.Sessions = tc.sessions
		ids, starts, err := Injected(c, 1, 4, shapes)
		if err != nil {
			t.Fatal(err)
		}
		if got := dense(ids, starts); got != tc.want {
			t.Errorf("%d sessions: ids %s, want %s", tc.sessions, got, tc.want)
		}
	}
}

// A session's turn starts with its previous prompt's full blocks, the
// block counts match the input lengths, and the same seed gives the same
// ids while another gives others.
func TestInjectInvariants(t *testing.T) {
	var shapes []Shape
	for i := range 3000 {
		shapes = append(shapes, Shape{Input: 1 + (i*7919)%20000, Output: 1 + (i*104729)%900})
	}
	c := Inject{SystemTokens: 1000, Tenants: 8, TenantTokens: 2048, TenantZipf: 1.2, SessionContinue: 0.7, Sessions: 50, SessionGap: 5}
	const bt = 512
	ids, starts, err := Injected(c, 7, bt, shapes)
	if err != nil {
		t.Fatal(err)
	}
	sysID := int64(-1)
	for r, s := range shapes {
		got := ids[starts[r]:starts[r+1]]
		if want := (s.Input + bt - 1) / bt; len(got) != want {
			t.Fatalf("request %d: %d ids for %d tokens, want %d", r, len(got), s.Input, want)
		}
		if s.Input >= bt { // the system prompt's first block, whole
			if sysID < 0 {
				sysID = got[0]
			}
			if got[0] != sysID {
				t.Fatalf("request %d: first block %d, want the system prompt's %d", r, got[0], sysID)
			}
		}
		for _, h := range got {
			if h < 0 {
				t.Fatalf("request %d: negative id %d", r, h)
			}
		}
	}
	again, _, _ := Injected(c, 7, bt, shapes)
	if !slices.Equal(ids, again) {
		t.Error("same seed, other ids")
	}
	other, _, _ := Injected(c, 8, bt, shapes)
	if slices.Equal(ids, other) {
		t.Error("another seed, the same ids")
	}
	// Reuse: continued sessions and tenants share blocks beyond the system
	// prompt, so distinct blocks are well below references.
	seen := map[int64]bool{}
	for _, h := range ids {
		seen[h] = true
	}
	if ratio := float64(len(seen)) / float64(len(ids)); ratio > 0.8 {
		t.Errorf("distinct/references = %.2f: no session or tenant reuse", ratio)
	}
	// Without any layer every block is new but the system prompt's.
	none, _, _ := Injected(Inject{Sessions: 1, TenantZipf: 1}, 7, bt, shapes)
	seen = map[int64]bool{}
	for _, h := range none {
		seen[h] = true
	}
	if len(seen) != len(none) {
		t.Errorf("no layers: %d distinct of %d references, want all distinct", len(seen), len(none))
	}
}

// A continued turn's prompt begins with its session's previous prompt:
// every request either opens with the system prompt alone or shares more
// with one earlier request whose full blocks it holds whole.
func TestInjectSessionPrefix(t *testing.T) {
	c := Inject{SessionContinue: 1, Sessions: 4}
	const bt = 16
	in, _ := NewInjector(c, 3, bt)
	var prev [][]int64
	continued := 0
	for i := range 400 {
		input := 20 + i*3 // growing prompts always fit some history
		ids := in.Blocks(nil, input, 5)
		for _, p := range prev {
			full := p[:len(p)-1] // a prompt's last block may be partial
			if len(full) > 0 && len(full) <= len(ids) && slices.Equal(ids[:len(full)], full) {
				continued++
				break
			}
		}
		prev = append(prev, ids)
	}
	if continued < 300 {
		t.Errorf("%d of 400 requests continue an earlier prompt, want most", continued)
	}
}

// Tenants are Zipf-skewed: with a steep skew the first tenant opens most
// sessions, with none they are even.
func TestInjectZipf(t *testing.T) {
	share := func(z float64) float64 {
		c := Inject{Tenants: 4, TenantTokens: 64, TenantZipf: z, Sessions: 1}
		in, _ := NewInjector(c, 1, 64)
		counts := map[int64]int{}
		for range 4000 {
			counts[in.Blocks(nil, 100, 1)[0]]++
		}
		most := 0
		for _, n := range counts {
			most = max(most, n)
		}
		return float64(most) / 4000
	}
	if s := share(0); s > 0.3 {
		t.Errorf("uniform: the commonest tenant opened %.2f of sessions, want about 0.25", s)
	}
	if s := share(4); s < 0.85 {
		t.Errorf("zipf 4: the commonest tenant opened %.2f of sessions, want most", s)
	}
}

// Requests with ids keep them unless Replace; the Source counts the
// requests it injected.
func TestInjectSource(t *testing.T) {
	for _, replace := range []bool{false, true} {
		in, err := NewInjector(Inject{Replace: replace, Sessions: 1, TenantZipf: 1}, 1, 512)
		if err != nil {
			t.Fatal(err)
		}
		src := NewSource(trace.NewReader(strings.NewReader(tiny), "tiny.jsonl", trace.Options{}), trace.NewDict())
		src.Inject(in)
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
			got = append(got, slices.Clone(r.Blocks))
		}
		want, injected := "[[0 1] [0 2] [0 1]]", int64(0)
		if replace {
			want, injected = "[[0 1] [2 3] [4 5]]", 3 // every block new: no layer
		}
		if fmtBlocks(got) != want || src.Injected != injected || src.BlockAccesses != 6 {
			t.Errorf("replace=%v: blocks %s injected %d accesses %d, want %s %d 6", replace, fmtBlocks(got), src.Injected, src.BlockAccesses, want, injected)
		}
	}
}

func TestInjectValidate(t *testing.T) {
	ok := DefaultInject()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		set  func(*Inject)
		want string
	}{
		{func(c *Inject) { c.SystemTokens = -1 }, "system_tokens"},
		{func(c *Inject) { c.Tenants = MaxInjectTenants + 1 }, "tenants"},
		{func(c *Inject) { c.TenantTokens = 5 }, "tenant_tokens: needs tenants"},
		{func(c *Inject) { c.TenantZipf = math.NaN() }, "tenant_zipf"},
		{func(c *Inject) { c.TenantZipf = 11 }, "tenant_zipf"},
		{func(c *Inject) { c.SessionContinue = 1.5 }, "session_continue"},
		{func(c *Inject) { c.SessionContinue = -0.1 }, "session_continue"},
		{func(c *Inject) { c.Sessions = 0 }, "sessions"},
		{func(c *Inject) { c.SessionGap = -1 }, "session_gap"},
	} {
		c := ok
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", c, err, tc.want)
		}
		if _, err := NewInjector(c, 1, 512); err == nil {
			t.Errorf("%+v: NewInjector accepted it", c)
		}
	}
}

// The profile behind kvsim run's trace line.
func TestProfile(t *testing.T) {
	p := NewProfile()
	r := trace.NewReader(strings.NewReader(tiny), "tiny.jsonl", trace.Options{})
	var q trace.Request
	for r.Next(&q) == nil {
		p.Add(&q)
	}
	if p.Requests != 3 || p.BlockAccesses != 6 || p.Distinct() != 3 || p.Ceiling() != 0.5 || p.NoReuse() {
		t.Errorf("profile %+v distinct %d ceiling %v", p.Counts, p.Distinct(), p.Ceiling())
	}
	// gaps 5 and 4 ms: mean 4.5, sample sd 0.707
	if cv := p.GapCV(); math.Abs(cv-math.Sqrt(0.5)/4.5) > 1e-9 {
		t.Errorf("CV %v", cv)
	}
	if pm := p.PeakToMean(); pm != 1 { // all three in the one window
		t.Errorf("peak/mean %v, want 1", pm)
	}
	want := "3 requests over 0.009 s (333/s, inter-arrival CV 0.16, peak/mean 1s 1.00), 6 block accesses, 3 distinct blocks, infinite-cache hit ceiling 50.0%"
	if got := p.Line(); got != want {
		t.Errorf("line\n%s\nwant\n%s", got, want)
	}
	if got := NewProfile().Line(); got != "no requests" {
		t.Errorf("empty: %q", got)
	}
}

// FuzzInject: any parameters and lengths give ceil(input/bt) ids per
// request, never panic, and are deterministic.
func FuzzInject(f *testing.F) {
	f.Add(uint16(1000), uint8(3), uint16(512), 1.0, 0.5, uint16(8), uint16(2), uint16(16), []byte{1, 200, 3, 40, 0, 255})
	f.Fuzz(func(t *testing.T, sys uint16, tenants uint8, tenantTok uint16, zipf, cont float64, sessions, gap, bt uint16, lens []byte) {
		c := Inject{SystemTokens: int(sys), Tenants: int(tenants), TenantTokens: int(tenantTok), TenantZipf: zipf,
			SessionContinue: cont, Sessions: int(sessions), SessionGap: int(gap)}
		if c.Tenants == 0 {
			c.TenantTokens = 0
		}
		in, err := NewInjector(c, 1, int(bt))
		if err != nil {
			return
		}
		in2, _ := NewInjector(c, 1, int(bt))
		b := in.bt
		for i, l := range lens {
			input := int(l) * 37
			a := in.Blocks(nil, input, i)
			if want := (input + b - 1) / b; len(a) != want {
				t.Fatalf("%d ids for %d tokens of %d-token blocks", len(a), input, b)
			}
			if !slices.Equal(a, in2.Blocks(nil, input, i)) {
				t.Fatal("not deterministic")
			}
		}
	})
}
