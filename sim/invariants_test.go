package sim

import (
	"testing"

	"kvsim/core"
	"kvsim/trace"
	"kvsim/workload"
)

// TestConversationInvariants replays the Mooncake conversation trace with
// small tiers (so eviction, demotion, promotion and queueing all happen) and
// checks, per request and overall, what must always hold; after every
// event, that no link idles while a transfer ready for it waits; every
// 5000 events the core's accounting (HBM used + draining within capacity,
// no request waiting while the HBM it needs is free).
func TestConversationInvariants(t *testing.T) {
	path := needTrace(t)
	for _, name := range []string{"lru", "fifo", "s3fifo", "arc", "prefix-lru", "mooncake", "wtinylfu", "sieve", "gdsf", "lru-evict"} {
		for _, serial := range []bool{false, true} {
			evict := name
			if serial && evict != "lru" && evict != "fifo" {
				continue // the loading mode is the core's business, not the policy's
			}
			// Evicted HBM is held until its copy left (the scenarios'
			// default), but for lru-evict: free at once.
			hold := name != "lru-evict"
			if !hold {
				evict = "lru"
			}
			cfg := conversationConfig(evict)
			cfg.Core.Tiers[0].Capacity = 24 << 30
			cfg.Core.Tiers[1].Capacity = 96 << 30
			cfg.Core.HoldEvicted = hold
			cfg.GPU.Serial = serial
			g := cfg.GPU
			var n, bad int
			s, err := New(cfg, func(r *core.Record) {
				n++
				if r.Rejected {
					return
				}
				var hits int64
				for _, h := range r.HitBlocks {
					hits += h
				}
				compute := g.ComputeNs(r.InputTokens-r.RecomputedTokens, r.RecomputedTokens)
				// A preempted request prefills again: its compute adds up.
				if r.TTFT() < compute || (r.ComputeNs != compute && r.Preemptions == 0) || r.ComputeNs < compute || r.TTFT() < r.QueueNs()+r.DepWaitNs() ||
					int(hits) > r.Blocks || r.BlockHits < int(hits) || r.Done < r.FirstToken {
					if bad++; bad < 5 {
						t.Errorf("%s serial=%v: request %d breaks an invariant: %+v (compute %d)", name, serial, r.Seq, *r, compute)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			events := 0
			s.OnEvent(func(s *Sim) {
				if err := linksBusy(s); err != nil {
					t.Fatal(err)
				}
				// The GPU never idles while a queued prefill could start.
				if s.gpu <= s.now {
					for _, id := range s.pq {
						if s.req[id].ready <= s.now {
							t.Fatalf("t=%d: the GPU is idle while a prefill is ready", s.now)
						}
					}
				}
				if events++; events%5000 == 0 {
					if err := s.Core().Check(); err != nil {
						t.Fatal(err)
					}
				}
			})
			r, err := trace.Open(path, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(workload.NewSource(r, trace.NewDict()))
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			st := res.Stats
			var hits int64
			for _, h := range st.Hits {
				hits += h
			}
			if hits+st.Misses != st.BlockAccesses || st.Requests+st.Rejected != 12031 || n != 12031 {
				t.Errorf("%s: hits %d + misses %d vs accesses %d; %d+%d requests", evict, hits, st.Misses, st.BlockAccesses, st.Requests, st.Rejected)
			}
			if st.Hits[1] == 0 || st.Demotions[0] == 0 || st.Drops[1] == 0 || hold != (st.DrainWaits > 0) {
				t.Errorf("%s: the check should exercise DRAM hits, demotions, drops and (held) drain waits: %+v", name, st)
			}
			if err := s.Core().Check(); err != nil {
				t.Error(err)
			}
			if s.Core().Running() != 0 || s.Core().Queued() != 0 {
				t.Errorf("requests left over: %d running, %d queued", s.Core().Running(), s.Core().Queued())
			}
		}
	}
}
