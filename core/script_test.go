package core

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"kvsim/internal/golden"
	"kvsim/policy"
)

// recorder is a Mover that writes every command as a line.
type recorder struct {
	c     *Core
	names []string // block id -> name
	out   *strings.Builder
}

func (r *recorder) req(id ReqID) string { return "R" + strconv.FormatInt(r.c.Request(id).Seq, 10) }
func (r *recorder) tier(t int) string   { return r.c.cfg.Tiers[t].Name }

var kinds = [...]string{"load", "demote", "write-through", "prefetch"}

func (r *recorder) Move(now int64, req ReqID, b Block, bytes int64, from, to int, kind MoveKind) {
	who := ""
	if req >= 0 {
		who = " for " + r.req(req)
	}
	fmt.Fprintf(r.out, "move %s %s->%s %s %dB%s\n", r.names[b], r.tier(from), r.tier(to), kinds[kind], bytes, who)
}
func (r *recorder) Drop(now int64, b Block, t int) {
	fmt.Fprintf(r.out, "drop %s@%s\n", r.names[b], r.tier(t))
}
func (r *recorder) Prefill(now int64, req ReqID, cached, compute int) {
	fmt.Fprintf(r.out, "prefill %s cached=%d compute=%d\n", r.req(req), cached, compute)
}
func (r *recorder) Decode(now int64, req ReqID, tokens int) {
	fmt.Fprintf(r.out, "decode %s %d\n", r.req(req), tokens)
}
func (r *recorder) Wake(at int64, req ReqID) { fmt.Fprintf(r.out, "wake %s at %d\n", r.req(req), at) }
func (r *recorder) Preempted(now int64, req ReqID) {
	fmt.Fprintf(r.out, "preempted %s\n", r.req(req))
}

// fixedCost is a CostModel with per-byte load and per-token compute costs.
type fixedCost struct {
	loadPerByte, computePerToken int64
	overlap                      bool
}

func (f fixedCost) EstimateLoad(_ int64, _ int, bytes int64) (int64, int64) {
	return 0, f.loadPerByte * bytes
}
func (f fixedCost) EstimateCompute(_, compute int) int64 { return f.computePerToken * int64(compute) }
func (f fixedCost) Overlapped() bool                     { return f.overlap }

// scriptState is one script's world.
type scriptState struct {
	cfg  Config
	c    *Core
	rec  *recorder
	ids  map[string]Block
	reqs map[string]ReqID // "R0" -> slot, while live
	seq  int64
}

func (s *scriptState) block(name string) Block {
	if id, ok := s.ids[name]; ok {
		return id
	}
	id := Block(len(s.ids))
	s.ids[name] = id
	s.rec.names = append(s.rec.names, name)
	return id
}

func kv(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func atoi(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

// run executes one command and returns its output.
func (s *scriptState) run(t *testing.T, line string) string {
	f := strings.Fields(line)
	a := kv(f[1:])
	var out strings.Builder
	if s.rec != nil {
		s.rec.out = &out
	}
	now := int64(0)
	if v, ok := a["t"]; ok {
		now = atoi(t, v)
	}
	switch f[0] {
	case "config":
		// config tiers=hbm:30,dram:100[/MAXBLOCKS] bpt=1 bt=10 evict=lru [admission= write= promotion= prefetch= timeout= stage= maxrun= pt= hold=1 idle=1]
		s.cfg = Config{BytesPerToken: atoi(t, a["bpt"]), BlockTokens: int(atoi(t, a["bt"]))}
		if v, ok := a["maxrun"]; ok {
			s.cfg.MaxRunning = int(atoi(t, v))
		}
		if v, ok := a["pt"]; ok {
			s.cfg.PageTokens = int(atoi(t, v))
		}
		s.cfg.HoldEvicted = a["hold"] == "1"

		for _, tv := range strings.Split(a["tiers"], ",") { // NAME:BYTES[/MAXBLOCKS]
			n, c, _ := strings.Cut(tv, ":")
			c, mb, _ := strings.Cut(c, "/")
			tier := Tier{Name: n, Capacity: atoi(t, c)}
			if mb != "" {
				tier.MaxBlocks = int(atoi(t, mb))
			}
			s.cfg.Tiers = append(s.cfg.Tiers, tier)
		}
		evict := a["evict"]
		s.cfg.NewPolicy = func(int, int64) (policy.Policy, error) {
			p, err := policy.New(evict, policy.Config{})
			if err == nil && a["idle"] == "1" {
				return policy.IdleRank(p)
			}
			return p, err
		}
		var err error
		st := &s.cfg.Strategy
		if st.AdmitAfter, err = ParseAdmission(a["admission"]); err == nil {
			if st.WriteThrough, err = ParseWrite(a["write"]); err == nil {
				if st.Promotion, err = ParsePromotion(a["promotion"]); err == nil {
					st.Prefetch, err = ParsePrefetch(a["prefetch"])
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := a["timeout"]; ok {
			st.PrefetchTimeout = atoi(t, v)
		}
		if st.RecomputeWhenCheaper, err = ParseRecompute(a["recompute"]); err != nil {
			t.Fatal(err)
		}
		if st.Stage, err = ParseStage(a["stage"]); err != nil {
			t.Fatal(err)
		}
		if v, ok := a["cost"]; ok { // cost=LOAD_NS_PER_BYTE/COMPUTE_NS_PER_TOKEN[/overlap]
			f := strings.Split(v, "/")
			s.cfg.Cost = fixedCost{loadPerByte: atoi(t, f[0]), computePerToken: atoi(t, f[1]), overlap: len(f) > 2}
		}
		s.rec = &recorder{out: &out}
		s.c, err = New(s.cfg, s.rec, func(r *Record) {
			fmt.Fprintf(s.rec.out, "done R%d hits=%v block-hits=%d recomputed=%d rejected=%v", r.Seq, r.HitBlocks, r.BlockHits, r.RecomputedTokens, r.Rejected)
			if r.Preemptions > 0 {
				fmt.Fprintf(s.rec.out, " preemptions=%d admitted=%d first-token=%d load-wait=%d", r.Preemptions, r.Admitted, r.FirstToken, r.LoadWaitNs)
			}
			fmt.Fprintln(s.rec.out)
		})
		if err != nil {
			t.Fatal(err)
		}
		s.rec.c = s.c
		s.ids, s.reqs, s.seq = map[string]Block{}, map[string]ReqID{}, 0
	case "arrive":
		// arrive t=0 in=20 out=0 blocks=A,B [idle=NS]
		r := Request{Seq: s.seq, Arrival: now, InputTokens: int(atoi(t, a["in"])), OutputTokens: int(atoi(t, a["out"]))}
		if v, ok := a["idle"]; ok {
			r.IdleNs = atoi(t, v)
		}
		if a["blocks"] != "" { // blocks= : none (a trace without hash ids)
			for _, n := range strings.Split(a["blocks"], ",") {
				r.Blocks = append(r.Blocks, s.block(n))
			}
		}
		name := "R" + strconv.FormatInt(s.seq, 10)
		s.seq++
		before := len(s.c.free)
		slot := ReqID(len(s.c.reqs))
		if before > 0 {
			slot = s.c.free[before-1]
		}
		s.reqs[name] = slot
		s.c.Arrive(now, &r)
	case "prefill-done":
		// prefill-done R0 t=5 [resume=N wait=NS]: N generated tokens recomputed
		tm := Timing{}
		if v, ok := a["resume"]; ok {
			tm.ResumeTokens = int(atoi(t, v))
		}
		if v, ok := a["wait"]; ok {
			tm.LoadWaitNs = atoi(t, v)
		}
		s.c.PrefillDone(now, s.reqs[f[1]], tm)
	case "grow":
		// grow R0 tokens=11 t=5: prints whether R0 still runs
		if id := s.reqs[f[1]]; s.c.Grow(now, id, int(atoi(t, a["tokens"]))) {
			out.WriteString("ok\n")
		} else if s.c.GrowWaiting(id) {
			out.WriteString("waits\n")
		} else {
			out.WriteString("preempted itself\n")
		}
	case "decode-done":
		s.c.DecodeDone(now, s.reqs[f[1]])
	case "drained":
		// drained A t=5: a move of A out of HBM has left it
		s.c.Drained(now, s.ids[f[1]])
	case "move-done":
		s.c.MoveDone(now, s.reqs[f[1]], s.ids[f[2]])
	case "preload":
		// preload A tier=2 bytes=10: before any arrival
		if !s.c.Preload(int(atoi(t, a["tier"])), s.block(f[1]), atoi(t, a["bytes"])) {
			out.WriteString("refused\n")
		}
	case "lost":
		// lost B tier=1
		s.c.Lost(now, s.ids[f[1]], int(atoi(t, a["tier"])))
	case "wake":
		s.c.Wake(now, s.reqs[f[1]])
	case "state":
		for ti, tier := range s.cfg.Tiers {
			var names []string
			for n, id := range s.ids {
				if s.c.Resident(id, ti) {
					if s.c.pins[id] > 0 {
						n += "*"
					}
					names = append(names, n)
				}
			}
			sort.Strings(names)
			fmt.Fprintf(&out, "%s %d/%d:%s\n", tier.Name, s.c.Used(ti), s.c.Capacity(ti), strings.Join(append([]string{""}, names...), " "))
		}
		if s.cfg.HoldEvicted {
			fmt.Fprintf(&out, "draining %d\n", s.c.Draining())
		}
		fmt.Fprintf(&out, "queued %d running %d\n", s.c.Queued(), s.c.Running())
	case "stats":
		st := s.c.Stats
		fmt.Fprintf(&out, "hits=%v misses=%d evictions=%v demotions=%v drops=%v promotions=%v denied=%v write-throughs=%d transient=%d prefetches=%d late=%d lost=%v cuts=%d staged=%d preemptions=%d resume-tokens=%d\n",
			st.Hits, st.Misses, st.Evictions, st.Demotions, st.Drops, st.Promotions, st.AdmissionDenied, st.WriteThroughs, st.TransientLoads, st.Prefetches, st.PrefetchLate, st.Lost, st.RecomputeCuts, st.Staged, st.Preemptions, st.ResumeTokens)
	default:
		t.Fatalf("unknown command %q", f[0])
	}
	if s.c != nil {
		if err := s.c.Check(); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	return out.String()
}

// TestScripts runs testdata/*.txt: each "command\n----\noutput\n" block must
// print exactly its output (golden.Script). go test ./core -update
// refreshes them.
func TestScripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no scripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var s scriptState
			golden.Script(t, file, func(cmd string) string { return s.run(t, cmd) })
		})
	}
}
