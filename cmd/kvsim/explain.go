package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"kvsim/internal/atomicfile"
	"kvsim/report"
	"kvsim/results"
	"kvsim/sim"
)

// kvsim explain reads a results folder's events.bin (kvsim run
// --trace-events) and tells one request's timeline, one block's journey,
// or, with neither, the run's count of hits slower than recompute
// (docs/explain.md).

func runExplain(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("explain", "kvsim explain RESULTS [--request SEQ | --block ID] [--policy NAME] [--instance N] [--html FILE]", stderr)
	req := fs.String("request", "", "tell request `SEQ`'s timeline (its trace position, requests.csv's seq)")
	blk := fs.String("block", "", "tell block `ID`'s journey (a dense id, as the log names it)")
	pol := fs.String("policy", "", "the policy `NAME` to explain (default the first)")
	instFlag := fs.String("instance", "", "in a [cluster] run, explain instance `N` only (default: every instance the request or block is in)")
	html := fs.String("html", "", "also write the timeline as an HTML page to `FILE`")
	paths, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(paths) != 1 {
		return badInputf("explain: want one results folder (usage: kvsim explain RESULTS [--request SEQ | --block ID])")
	}
	if *req != "" && *blk != "" {
		return badInputf("explain: --request and --block exclude each other")
	}
	seq, id, inst := int64(-1), int64(-1), int64(-1)
	for _, f := range []struct {
		name, v string
		to      *int64
	}{{"--request", *req, &seq}, {"--block", *blk, &id}, {"--instance", *instFlag, &inst}} {
		if f.v == "" {
			continue
		}
		n, err := strconv.ParseInt(f.v, 10, 64)
		if err != nil || n < 0 {
			return badInputf("explain: %s %q: want an integer >= 0", f.name, f.v)
		}
		*f.to = n
	}
	if *html != "" && seq < 0 && id < 0 {
		return badInputf("explain: --html needs --request or --block")
	}
	lg, err := loadEvents(paths[0])
	if err != nil {
		return err
	}
	var out strings.Builder
	var rows []timelineRow
	switch {
	case seq >= 0:
		pi, err := lg.policy(*pol)
		if err != nil {
			return err
		}
		insts, err := lg.instances(pi, int(inst), func(e results.Event) bool { return e.Seq == seq && sim.EvKind(e.Kind) == sim.EvArrive })
		if err != nil {
			return err
		}
		if len(insts) == 0 {
			return badInputf("explain: request %d: not in the log of policy %q%s (no such seq, or past the log's cap%s)",
				seq, lg.Header.Policies[pi].Name, lg.instanceNote(int(inst)), lg.refusedNote())
		}
		for _, i := range insts {
			rows = append(rows, explainRequest(&out, lg, pi, i, seq)...)
		}
	case id >= 0:
		pi, err := lg.policy(*pol)
		if err != nil {
			return err
		}
		insts, err := lg.instances(pi, int(inst), func(e results.Event) bool { return e.Block == id })
		if err != nil {
			return err
		}
		if len(insts) == 0 {
			return badInputf("explain: block %d: not in the log of policy %q%s (no such block, or past the log's cap)",
				id, lg.Header.Policies[pi].Name, lg.instanceNote(int(inst)))
		}
		for _, i := range insts {
			rows = append(rows, explainBlock(&out, lg, pi, i, id)...)
		}
	default:
		if *pol != "" {
			if _, err := lg.policy(*pol); err != nil {
				return err
			}
		}
		if inst >= 0 {
			for pi := range lg.Header.Policies {
				if _, err := lg.instances(pi, int(inst), nil); err != nil {
					return err
				}
			}
		}
		explainSummary(&out, lg, *pol, int(inst))
	}
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return err
	}
	if *html != "" {
		title := fmt.Sprintf("request %d", seq)
		if id >= 0 {
			title = fmt.Sprintf("block %d", id)
		}
		if err := writeTimelinePage(*html, lg.Header.RunID, title, out.String(), rows); err != nil {
			return err
		}
	}
	return nil
}

// eventLog is a loaded events.bin with the summary's scenario name.
type eventLog struct {
	*results.EventLog
	dir string
}

// loadEvents reads dir's events.bin and checks it belongs to the run whose
// summary.json is beside it.
func loadEvents(dir string) (*eventLog, error) {
	sum, err := results.ReadSummary(filepath.Join(dir, results.SummaryFile))
	if err != nil {
		return nil, badInputf("explain: %s: not a results folder (%v)", dir, err)
	}
	path := filepath.Join(dir, results.EventsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, badInputf("explain: %s has no %s: rerun with kvsim run --trace-events", dir, results.EventsFile)
	}
	if err != nil {
		return nil, badInput(err)
	}
	l, err := results.ParseEvents(b)
	if err != nil {
		return nil, badInputf("explain: %s: %v", path, err)
	}
	if l.Header.RunID != sum.RunID {
		return nil, badInputf("explain: %s is from another run than %s (run_id %s, not %s): rerun with kvsim run --trace-events",
			path, results.SummaryFile, l.Header.RunID, sum.RunID)
	}
	return &eventLog{EventLog: l, dir: dir}, nil
}

// policy finds a policy by name ("": the first).
func (l *eventLog) policy(name string) (int, error) {
	if len(l.Header.Policies) == 0 {
		return 0, badInputf("explain: %s holds no policy", l.dir)
	}
	if name == "" {
		return 0, nil
	}
	var names []string
	for i, p := range l.Header.Policies {
		if p.Name == name {
			return i, nil
		}
		names = append(names, p.Name)
	}
	return 0, badInputf("explain: no policy %q in %s (it has %s)", name, l.dir, strings.Join(names, ", "))
}

// cluster says the log is a [cluster] run's: its records are per instance.
func (l *eventLog) cluster() bool {
	return len(l.Header.Policies) > 0 && len(l.Header.Policies[0].Instances) > 0
}

// instances are the instances of policy pi's log holding a record that
// has (nil: all), or only inst when inst >= 0 (bad input when the log has
// no such instance).
func (l *eventLog) instances(pi, inst int, has func(results.Event) bool) ([]int, error) {
	n := l.InstanceCount(pi)
	if inst >= n {
		if !l.cluster() {
			return nil, badInputf("explain: --instance %d: %s is not a [cluster] run's (its one instance is 0)", inst, l.dir)
		}
		return nil, badInputf("explain: --instance %d: the run had %d instances (0 to %d)", inst, n, n-1)
	}
	var out []int
	for i := range n {
		if inst >= 0 && i != inst {
			continue
		}
		if has == nil || slices.ContainsFunc(l.InstanceEvents(pi, i), has) {
			out = append(out, i)
		}
	}
	return out, nil
}

// instanceNote names the instance a search was limited to.
func (l *eventLog) instanceNote(inst int) string {
	if inst < 0 || !l.cluster() {
		return ""
	}
	return fmt.Sprintf(" on instance %d", inst)
}

// refusedNote is the other reason a cluster's request is in no log.
func (l *eventLog) refusedNote() string {
	if !l.cluster() {
		return ""
	}
	return ", or the router refused it: requests.csv's instance -1"
}

// instanceName is how a heading names instance i of a cluster's log ("" in
// a single run's).
func (l *eventLog) instanceName(i int) string {
	if !l.cluster() {
		return ""
	}
	role := ""
	if p := l.Header.Prefill; p > 0 {
		role = " (decode)"
		if i < p {
			role = " (prefill)"
		}
	}
	return fmt.Sprintf(", instance %d%s", i, role)
}

// lane names a timeline lane, by instance in a cluster's log.
func (l *eventLog) lane(i int, name string) string {
	if !l.cluster() {
		return name
	}
	return fmt.Sprintf("i%d %s", i, name)
}

func (l *eventLog) tier(t int8) string {
	if t >= 0 && int(t) < len(l.Header.Tiers) {
		return l.Header.Tiers[t]
	}
	if t == -1 {
		return "remote"
	}
	return "tier" + strconv.Itoa(int(t))
}

func (l *eventLog) link(i uint8) string {
	if int(i) < len(l.Header.Links) {
		return l.Header.Links[i]
	}
	return "link" + strconv.Itoa(int(i))
}

// latency is link i's latency (0 if the log does not say).
func (l *eventLog) latency(i uint8) int64 {
	if int(i) < len(l.Header.LinkLatency) {
		return l.Header.LinkLatency[i]
	}
	return 0
}

// tiersOf names the tiers of a residency mask.
func (l *eventLog) tiersOf(mask uint8) string {
	var s []string
	for t := range 8 {
		if mask&(1<<t) != 0 {
			s = append(s, l.tier(int8(t)))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+")
}

var moveKinds = [...]string{"load", "demotion", "write-through", "prefetch"}

func moveKind(k uint8) string {
	if int(k) < len(moveKinds) {
		return moveKinds[k]
	}
	return "move" + strconv.Itoa(int(k))
}

// ms renders ns as milliseconds with three decimals (microseconds).
func ms(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) + " ms" }

type timelineRow = report.TimelineRow

func row(lane string, from, to int64, label string) timelineRow {
	return timelineRow{Lane: lane, From: from, To: to, Label: label}
}

// truncNote tells that the log stopped at its cap.
func truncNote(w io.Writer, p results.EventsPolicy) {
	if p.Dropped > 0 {
		fmt.Fprintf(w, "note: the log kept the first %d events of this policy and dropped %d (--trace-events-max): later events are missing\n", p.Events, p.Dropped)
	}
}

// loadSpan is one admission's loads of a request: what the break-even weighs.
type loadSpan struct {
	start, end   int64
	blocks       int
	perTier      map[int8]int
	tokens, reNs int64 // from EvBreakEven
	have         bool
}

// requestLoads finds the loads of request seq's first prefill and its
// break-even figures.
func requestLoads(es []results.Event, seq int64) loadSpan {
	sp := loadSpan{start: -1, perTier: map[int8]int{}}
	prefill := int64(-1)
	// Its first prefill starts once these loads landed: later landings are
	// a re-admission's (after a preemption).
	cutoff, first := int64(-1), int64(-1)
	for _, e := range es {
		if e.Seq != seq {
			continue
		}
		switch sim.EvKind(e.Kind) {
		case sim.EvInStep:
			if cutoff < 0 {
				cutoff = e.Time
			}
		case sim.EvFirstToken:
			first = e.Time
		case sim.EvPrefill:
			if prefill < 0 {
				prefill = e.Time
			}
		case sim.EvBreakEven:
			if !sp.have {
				sp.tokens, sp.reNs, sp.have = e.A, e.B, true
			}
		}
	}
	if cutoff < 0 {
		cutoff = first // the simple engine logs no steps
	}
	// A hit below tier 1 may come up in two moves (stage = "copy": to tier
	// 1, then to HBM): the block counts once, for the deepest tier.
	deepest := map[int64]int8{}
	var into []int64 // blocks loaded into HBM, in order
	for _, e := range es {
		if e.Seq != seq || e.Aux != 0 || (prefill >= 0 && e.Time > prefill && sim.EvKind(e.Kind) == sim.EvMove) {
			continue
		}
		switch sim.EvKind(e.Kind) {
		case sim.EvMove:
			if sp.start < 0 || e.Time < sp.start {
				sp.start = e.Time
			}
			if d, ok := deepest[e.Block]; !ok || e.From > d {
				deepest[e.Block] = e.From
			}
			if e.To == 0 {
				into = append(into, e.Block)
			}
		case sim.EvLand:
			if e.To == 0 && sp.start >= 0 && (cutoff < 0 || e.Time <= cutoff) {
				sp.end = max(sp.end, e.Time)
			}
		}
	}
	for _, b := range into {
		sp.blocks++
		sp.perTier[deepest[b]]++
	}
	return sp
}

// lineOrder ranks a request's events logged at the same time in the order
// they happen (the record's events are logged when it finishes).
var lineOrder = map[sim.EvKind]int{sim.EvArrive: 0, sim.EvAdmit: 1, sim.EvHit: 2, sim.EvMove: 3, sim.EvHop: 4,
	sim.EvLand: 5, sim.EvPrefill: 6, sim.EvPreempt: 7, sim.EvInStep: 8, sim.EvFirstToken: 9, sim.EvDone: 10}

// explainRequest writes request seq's timeline in policy pi on instance
// inst (0 in a single run), whose log holds its arrival.
func explainRequest(w io.Writer, l *eventLog, pi, inst int, seq int64) []timelineRow {
	es := l.InstanceEvents(pi, inst)
	p := l.Header.Policies[pi]
	row := func(lane string, from, to int64, label string) timelineRow {
		return row(l.lane(inst, lane), from, to, label)
	}
	fmt.Fprintf(w, "request %d, policy %s%s\n", seq, p.Name, l.instanceName(inst))
	truncNote(w, p)
	var rows []timelineRow
	var arrival int64
	// Steps: an EvStep is followed by its EvInStep records.
	var stepStart, stepEnd int64
	type line struct {
		t   int64
		k   int
		txt string
	}
	var lines []line
	var k sim.EvKind
	add := func(t int64, format string, args ...any) {
		lines = append(lines, line{t, lineOrder[k], fmt.Sprintf(format, args...)})
	}
	var refs []string
	var first int64
	admitted := int64(-1) // the first admission (logged when the request finishes)
	since := int64(-1)    // the arrival its record counts from (requests.csv's)
	prefilled := false
	for _, e := range es {
		if e.Seq == seq && sim.EvKind(e.Kind) == sim.EvAdmit {
			admitted, since = e.Time, e.A
			break
		}
	}
	for _, e := range es {
		k = sim.EvKind(e.Kind)
		if k == sim.EvStep {
			stepStart, stepEnd = e.Time, e.A
			continue
		}
		if e.Seq != seq {
			continue
		}
		switch k {
		case sim.EvArrive:
			arrival = e.Time
			if since >= 0 && since < e.Time {
				// A disaggregated decode: handed over by the prefill
				// instance; its record, and requests.csv, count from the
				// request's arrival at the prefill instance.
				add(e.Time, "arrival from the prefill instance (the request arrived at %s): %s, %s", ms(since), plural(e.A, "prompt token"), plural(e.B, "output token"))
				arrival = since
			} else {
				add(e.Time, "arrival: %s, %s", plural(e.A, "prompt token"), plural(e.B, "output token"))
			}
			rows = append(rows, row("request", e.Time, e.Time, "arrival"))
		case sim.EvRef:
			refs = append(refs, fmt.Sprintf("%d:%s", e.Block, l.tiersOf(e.Aux)))
		case sim.EvAdmit:
			add(e.Time, "admitted: waited %s in the queue (for HBM space or a running slot)", ms(e.Time-e.A))
			rows = append(rows, row("request", e.A, e.Time, "queue"))
		case sim.EvHit:
			add(e.Time, "hit: %s of its prefix in %s", plural(e.A, "block"), l.tier(e.From))
		case sim.EvMove:
			add(e.Time, "%s of block %d issued: %s -> %s, %s", moveKind(e.Aux), e.Block, l.tier(e.From), l.tier(e.To), plural(e.A, "byte"))
		case sim.EvHop:
			lat := l.latency(e.Aux)
			add(e.Time, "block %d on %s: joined the link at %s; waited %s for a lane, %s of latency, %s for the busy pipe; bytes moving from %s",
				e.Block, l.link(e.Aux), ms(e.A), ms(e.B-lat-e.A), ms(lat), ms(e.Time-e.B), ms(e.Time))
		case sim.EvLand:
			add(e.Time, "block %d landed in %s (%s)", e.Block, l.tier(e.To), moveKind(e.Aux))
			rows = append(rows, row("loads", arrival, e.Time, fmt.Sprintf("block %d %s->%s", e.Block, l.tier(e.From), l.tier(e.To))))
		case sim.EvPrefill:
			dep := ""
			if !prefilled && admitted >= 0 && e.Time > admitted {
				dep = fmt.Sprintf(" (after %s waiting for blocks other running requests were bringing into HBM)", ms(e.Time-admitted))
			}
			prefilled = true // a later prefill follows a preemption's re-admission
			add(e.Time, "prefill issued: %s cached, %s to compute%s", plural(e.A, "token"), commas(e.B), dep)
		case sim.EvInStep:
			add(stepStart, "step %s-%s: prefill chunk of %s", ms(stepStart), ms(stepEnd), plural(e.A, "token"))
			rows = append(rows, row("steps", stepStart, stepEnd, fmt.Sprintf("prefill %d", e.A)))
		case sim.EvPreempt:
			add(e.Time, "preempted: lost its HBM, re-queued to recompute")
		case sim.EvFirstToken:
			first = e.Time
			add(e.Time, "first token: TTFT %s", ms(e.Time-arrival))
			rows = append(rows, row("request", e.Time, e.Time, "first token"))
		case sim.EvDone:
			if e.B < 0 {
				add(e.Time, "rejected: larger than HBM")
			} else {
				if n := stepsIn(es, first, e.Time); n > 0 && e.B == 0 {
					add(first, "decoding: in the %s from here to its done (one token each)", plural(int64(n), "step"))
				} else if n > 0 {
					add(first, "decoding: in steps from here to its done (%s, less those it spent preempted)", plural(int64(n), "step"))
				}
				add(e.Time, "done: %s after arrival, %s recomputed, %s", ms(e.Time-arrival), plural(e.A, "prompt token"), plural(e.B, "preemption"))
			}
			rows = append(rows, row("request", e.Time, e.Time, "done"))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if lines[i].t != lines[j].t {
			return lines[i].t < lines[j].t
		}
		return lines[i].k < lines[j].k
	})
	if len(refs) > 0 {
		fmt.Fprintf(w, "  blocks at arrival (id:tiers holding it): %s\n", strings.Join(refs, " "))
	}
	for _, ln := range lines {
		fmt.Fprintf(w, "  %12s  %s\n", ms(ln.t), ln.txt)
	}
	fmt.Fprintf(w, "break-even: %s\n", breakEven(l, requestLoads(es, seq)))
	return rows
}

// stepsIn counts the steps that start in [from, to): those a request
// decoding from its first token to its done ran in.
func stepsIn(es []results.Event, from, to int64) int {
	n := 0
	for _, e := range es {
		if sim.EvKind(e.Kind) == sim.EvStep && e.Time >= from && e.Time < to {
			n++
		}
	}
	return n
}

// breakEven is the verdict on a request's loads (docs/explain.md).
func breakEven(l *eventLog, sp loadSpan) string {
	if sp.blocks == 0 || !sp.have {
		return "no loads into HBM: nothing to weigh"
	}
	var parts []string
	for t := int8(-1); t < 8; t++ { // -1: another node's HBM
		if n := sp.perTier[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", l.tier(t), n))
		}
	}
	took := sp.end - sp.start
	verdict := "faster than recompute"
	if took > sp.reNs {
		verdict = "slower than recompute"
	}
	return fmt.Sprintf("the hit of %s (%s) took %s to load; recomputing %s tokens would have taken %s: %s",
		plural(int64(sp.blocks), "block"), strings.Join(parts, ", "), ms(took), commas(sp.tokens), ms(sp.reNs), verdict)
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return commas(n) + " " + what + "s"
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// explainBlock writes block id's journey in policy pi on instance inst (0
// in a single run), whose log names it: its copies, what ended each, and
// the requests that referenced it.
func explainBlock(w io.Writer, l *eventLog, pi, inst int, id int64) []timelineRow {
	es := l.InstanceEvents(pi, inst)
	p := l.Header.Policies[pi]
	var rows []timelineRow
	var where uint8             // tiers holding a copy, as the log tells
	since := map[int8]int64{}   // copy in tier since
	demoted := map[int8]int64{} // a demotion out of tier issued at
	seen := false
	var lines []string
	for _, e := range es {
		if e.Block != id {
			continue
		}
		seen = true
		t := ms(e.Time)
		switch sim.EvKind(e.Kind) {
		case sim.EvRef:
			state := "a miss: computed into " + l.tier(0)
			if e.Aux != 0 {
				state = "a hit, held by " + l.tiersOf(e.Aux)
			}
			if e.Aux == 0 && where&1 == 0 {
				where |= 1
				since[0] = e.Time
			}
			lines = append(lines, fmt.Sprintf("  %12s  request %d references it: %s", t, e.Seq, state))
		case sim.EvMove:
			who := "background"
			if e.Seq >= 0 {
				who = "for request " + strconv.FormatInt(e.Seq, 10)
			}
			if e.Aux == 1 {
				demoted[e.From] = e.Time
			}
			// The core places the copy when it issues the move: from then
			// on it counts in the tier, its bytes still arriving.
			where |= 1 << e.To
			since[e.To] = e.Time
			lines = append(lines, fmt.Sprintf("  %12s  %s issued %s: %s -> %s; a copy placed in %s, arriving", t, moveKind(e.Aux), who, l.tier(e.From), l.tier(e.To), l.tier(e.To)))
		case sim.EvHop:
			lat := l.latency(e.Aux)
			lines = append(lines, fmt.Sprintf("  %12s  bytes moving on %s (joined %s; waited %s for a lane, %s of latency, %s for the busy pipe)",
				t, l.link(e.Aux), ms(e.A), ms(e.B-lat-e.A), ms(lat), ms(e.Time-e.B)))
		case sim.EvLand:
			lines = append(lines, fmt.Sprintf("  %12s  the %s's bytes all in %s", t, moveKind(e.Aux), l.tier(e.To)))
		case sim.EvDrop:
			why := "evicted to make room, dropped: no room or no admission below (with promotion = never, a transient copy released)"
			switch {
			case demoted[e.From] == e.Time:
				why = "evicted to make room: demoted to " + l.tier(e.From+1)
			case where&^(1<<e.From) != 0:
				why = "evicted or released: a copy stays in " + l.tiersOf(where&^(1<<e.From))
			}
			if s, ok := since[e.From]; ok {
				rows = append(rows, row(l.tier(e.From), s, e.Time, "copy"))
				delete(since, e.From)
			}
			where &^= 1 << e.From
			lines = append(lines, fmt.Sprintf("  %12s  copy in %s gone: %s; now in %s", t, l.tier(e.From), why, l.tiersOf(where)))
		}
	}
	if !seen {
		return nil // instances() chose inst for holding it
	}
	fmt.Fprintf(w, "block %d, policy %s%s\n", id, p.Name, l.instanceName(inst))
	truncNote(w, p)
	for _, s := range lines {
		fmt.Fprintln(w, s)
	}
	var end int64
	if n := len(es); n > 0 {
		end = es[n-1].Time
	}
	for t, s := range since {
		rows = append(rows, row(l.tier(t), s, max(s, end), "copy"))
	}
	fmt.Fprintf(w, "at the log's end: in %s\n", l.tiersOf(where))
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].From < rows[j].From })
	for i := range rows {
		rows[i].Lane = l.lane(inst, rows[i].Lane)
	}
	return rows
}

// explainSummary counts, per policy and source tier, the loaded hits whose
// request's loads took longer than recomputing them would have: over
// every instance of a cluster's log, or instance inst alone when >= 0.
func explainSummary(w io.Writer, l *eventLog, only string, inst int) {
	fmt.Fprintf(w, "hits slower than recompute (a request's loads took longer than recomputing their tokens in the same step model)\n")
	if l.cluster() {
		if inst >= 0 {
			fmt.Fprintf(w, "instance %d of the cluster\n", inst)
		} else {
			fmt.Fprintf(w, "every instance of the cluster (each request weighed on the instance that ran it; --instance N for one)\n")
		}
	}
	fmt.Fprintf(w, "%-16s %-10s %14s %14s %10s\n", "policy", "tier", "loaded blocks", "slower blocks", "requests")
	for pi, p := range l.Header.Policies {
		if only != "" && p.Name != only {
			continue
		}
		loaded, slower, slowReqs := map[int8]int{}, map[int8]int{}, map[int8]int{}
		for i := range l.InstanceCount(pi) {
			if inst >= 0 && i != inst {
				continue
			}
			es := l.InstanceEvents(pi, i)
			seqs := map[int64]bool{}
			var order []int64
			for _, e := range es {
				if sim.EvKind(e.Kind) == sim.EvBreakEven && !seqs[e.Seq] {
					seqs[e.Seq] = true
					order = append(order, e.Seq)
				}
			}
			for _, s := range order {
				sp := requestLoads(es, s)
				slow := sp.have && sp.blocks > 0 && sp.end-sp.start > sp.reNs
				for t, n := range sp.perTier {
					loaded[t] += n
					if slow {
						slower[t] += n
						slowReqs[t]++
					}
				}
			}
		}
		rows := 0
		for t := int8(-1); t < 8; t++ { // -1: another node's HBM

			if loaded[t] == 0 {
				continue
			}
			rows++
			fmt.Fprintf(w, "%-16s %-10s %14d %14d %10d\n", p.Name, l.tier(t), loaded[t], slower[t], slowReqs[t])
		}
		if rows == 0 {
			fmt.Fprintf(w, "%-16s %-10s %14d %14d %10d\n", p.Name, "-", 0, 0, 0)
		}
		truncNote(w, p)
	}
}

// writeTimelinePage writes an HTML timeline, refusing to replace a file
// kvsim did not write.
func writeTimelinePage(path, runID, title, text string, rows []timelineRow) error {
	if ok, _ := results.Replaceable(path, results.IsPage); !ok {
		return badInputf("explain: --html %s %v: it will not be replaced", path, results.ErrNotOurs)
	}
	return atomicfile.Write(path, report.TimelinePage(runID, title, text, rows))
}
