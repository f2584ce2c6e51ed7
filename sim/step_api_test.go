package sim

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"kvsim/core"
	"kvsim/internal/coretest"
)

// TestSteppingMatchesRun drives random scenarios (both engines) through
// AdvanceTo/Arrive/Finish with extra arrivals that bring no request (a
// coordinator stopping every instance at each cluster arrival), and checks
// that the records and the result are those of Run: an arrival no request
// takes must change nothing.
func TestSteppingMatchesRun(t *testing.T) {
	for seed := range uint64(12) {
		cfg, reqs := randomScenario(seed)
		if seed%2 == 1 {
			cfg = tiny(seed%4 == 1, 4, "lru")
			for i := range reqs {
				reqs[i].InputTokens = 10 * len(reqs[i].Blocks)
			}
		}
		rec := func(out *[]core.Record) core.Observer {
			return func(r *core.Record) {
				c := *r
				c.HitBlocks = append([]int64(nil), r.HitBlocks...)
				*out = append(*out, c)
			}
		}
		var want, got []core.Record
		s, err := New(cfg, rec(&want))
		if err != nil {
			t.Fatal(err)
		}
		wres, err := s.Run(&coretest.Slice{Reqs: reqs})
		if err != nil {
			t.Fatal(err)
		}
		s2, err := New(cfg, rec(&got))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 3))
		var last int64
		for i := range reqs {
			r := &reqs[i]
			// Phantom arrivals between the last request and this one.
			for range rng.IntN(3) {
				at := last + rng.Int64N(r.Arrival-last+1)
				if err := s2.AdvanceTo(at); err != nil {
					t.Fatal(err)
				}
				last = at
			}
			if rng.IntN(2) == 0 {
				if err := s2.AdvanceTo(r.Arrival); err != nil {
					t.Fatal(err)
				}
				if n, ok := s2.NextEventTime(); ok && n < r.Arrival {
					t.Fatalf("seed %d: stopped at %d with an event due at %d", seed, r.Arrival, n)
				}
			}
			if err := s2.Arrive(r); err != nil {
				t.Fatal(err)
			}
			last = r.Arrival
			if err := s2.Core().Check(); err != nil {
				t.Fatal(err)
			}
			if p := s2.PendingPrefillTokens(); p < 0 {
				t.Fatalf("seed %d: %d prompt tokens pending", seed, p)
			}
		}
		gres, err := s2.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if p := s2.PendingPrefillTokens(); p != 0 {
			t.Fatalf("seed %d: %d prompt tokens pending after the run", seed, p)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("seed %d: records differ from Run's", seed)
		}
		if !reflect.DeepEqual(wres, gres) {
			t.Fatalf("seed %d: results differ from Run's:\n%+v\n%+v", seed, wres, gres)
		}
		if len(want) != len(reqs) {
			t.Fatalf("seed %d: %d records for %d requests", seed, len(want), len(reqs))
		}
	}
}

// TestAdvanceToBackwards: the clock never runs back.
func TestAdvanceToBackwards(t *testing.T) {
	s, err := New(tiny(false, 1, "lru"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AdvanceTo(10 * ms); err != nil {
		t.Fatal(err)
	}
	if err := s.AdvanceTo(5 * ms); err == nil {
		t.Fatal("AdvanceTo into the past: no error")
	}
	r := core.Request{Seq: 0, Arrival: core.MaxTime + 1, InputTokens: 10, Blocks: []core.Block{0}}
	if err := CheckArrival(&r, 0); err == nil {
		t.Fatal("an arrival past the limit passed")
	}
}
