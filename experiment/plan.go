package experiment

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"kvsim/policy"
	"kvsim/results"
	"kvsim/scenario"
)

// A plan searches a grid of tier capacities for the cheapest configuration
// whose simulation meets an SLO. Its points are sweep points: the same
// scenarios, names and run_ids as kvsim sweep --tier gives them (for one
// varied tier), so a plan reuses a sweep's finished folders and the other
// way round.
//
// The search assumes monotonicity: for one policy, more capacity in any
// varied tier never makes TTFT p99 or TPOT p99 worse nor SLO attainment
// lower, and the cost never falls. A point is then known to pass when a
// simulated point with no more capacity in any tier passed, and known to
// fail when one with no less capacity failed; it is simulated only when
// neither is known.

// A PlanDim is one varied tier and the capacities tried.
type PlanDim struct {
	Tier   string
	Values []string // as the scenario's capacity key takes them
}

// An SLOTarget is what a configuration must meet; 0 is a term not set.
type SLOTarget struct {
	TTFTp99    float64 `json:"ttft_p99_ms,omitempty"`
	TPOTp99    float64 `json:"tpot_p99_ms,omitempty"`
	Attainment float64 `json:"attainment,omitempty"`
	// LifeYears: every tier rated for endurance ([[tier]] dwpd or tbw)
	// lasts at least this long at the run's write rate (the ledger's
	// life_years); unrated tiers are not held to it.
	LifeYears float64 `json:"life_years,omitempty"`
}

// DefaultPlanMargin is kvsim plan's --margin: above the largest rise of
// TTFT p99 with capacity seen on the quick start's grid (22%, docs/plan.md).
const DefaultPlanMargin = 0.25

// CostFunc prices a configuration before it is simulated (the search
// orders by it). It is the one place a cost model plugs in.
type CostFunc func(sc *scenario.Scenario) float64

// HierarchyCost is summary.json's hierarchy_cost_usd: the sum over tiers
// of capacity x cost_per_gb.
func HierarchyCost(sc *scenario.Scenario) float64 {
	var c float64
	for _, t := range sc.Tiers {
		c += float64(t.Capacity) / 1e9 * t.CostPerGB
	}
	return c
}

// PlanSteps lists the capacities from a to b (bytes, 0 < a <= b): with
// steps 0, a doubled until it reaches b, then b; with steps >= 2, that
// many geometric steps from a to b, rounded to MiB (a and b exact).
func PlanSteps(a, b int64, steps int) []int64 {
	var vs []int64
	if steps == 0 {
		for v := a; v < b; v *= 2 {
			vs = append(vs, v)
		}
		return append(vs, b)
	}
	for i := 0; i < steps; i++ {
		v := a
		switch {
		case i == steps-1:
			v = b
		case i > 0:
			f := float64(a) * math.Pow(float64(b)/float64(a), float64(i)/float64(steps-1))
			v = int64(math.Round(f/(1<<20))) << 20
		}
		if len(vs) == 0 || v > vs[len(vs)-1] {
			vs = append(vs, v)
		}
	}
	return vs
}

// SizeString writes n bytes as a capacity the scenario reads back exactly.
func SizeString(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.n == 0 {
			return fmt.Sprintf("%d%s", n/u.n, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// A Plan is the grid: every combination of the dims' values, in row-major
// order (the last dim varies fastest).
type Plan struct {
	Base   *scenario.Scenario
	Dims   []PlanDim
	Key    string               // the sweep key: tier.NAME.capacity, comma-joined over dims
	Points []*scenario.Scenario // one per grid point
	Values []string             // each point's sweep value (its dims' values, comma-joined)
	Index  [][]int              // each point's index in every dim
	Cost   []float64            // each point's cost
	sums   []*results.Summary   // simulated points' summaries
	status [][]planStatus       // by point, by policy
}

type planStatus int8

const (
	unknown planStatus = iota
	pass
	fail
)

// LoadPlan loads the scenario at path once per grid point (after sets), so
// that every point is checked before any is simulated. Point folders are
// named as kvsim sweep --tier names them: <scenario>-<tier>-<value>, one
// tier-value pair per dim.
func LoadPlan(path string, sets []string, dims []PlanDim, cost CostFunc) (*Plan, error) {
	base, err := scenario.LoadWith(path, sets)
	if err != nil {
		return nil, BadInput(err)
	}
	if cost == nil {
		cost = HierarchyCost
	}
	p := &Plan{Base: base, Dims: dims}
	var keys []string
	for _, d := range dims {
		keys = append(keys, "tier."+d.Tier+".capacity")
	}
	p.Key = strings.Join(keys, ",")
	idx := make([]int, len(dims))
	for {
		name := base.Name
		pset := slices.Clone(sets)
		var vals []string
		for k, d := range dims {
			v := d.Values[idx[k]]
			name += "-" + PathSafe(d.Tier) + "-" + PathSafe(v)
			pset = append(pset, keys[k]+"="+v)
			vals = append(vals, v)
		}
		sc, err := scenario.LoadWith(path, pset)
		if err != nil {
			return nil, BadInput(err)
		}
		sc.Name = name
		p.Points = append(p.Points, sc)
		p.Values = append(p.Values, strings.Join(vals, ","))
		p.Index = append(p.Index, slices.Clone(idx))
		p.Cost = append(p.Cost, cost(sc))
		k := len(dims) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < len(dims[k].Values) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	return p, nil
}

// Label names a point's value by its varied tiers: host=64GiB ssd=1TiB.
func (p *Plan) Label(value string) string {
	var parts []string
	for i, v := range strings.Split(value, ",") {
		parts = append(parts, p.Dims[i].Tier+"="+v)
	}
	return strings.Join(parts, " ")
}

// Sweep is the plan's grid as a sweep (kvsim sweep's points and run_ids).
func (p *Plan) Sweep() *Sweep { return &Sweep{Key: p.Key, Values: p.Values, Points: p.Points} }

// PlanOptions say how a plan runs its simulations (Options, whose Out
// makes each simulated point's folder as kvsim sweep does) and what it
// looks for.
type PlanOptions struct {
	Options
	SLO    SLOTarget
	Budget float64 // > 0: points costing more are left out
	// Exhaustive simulates every point within the budget (the check the
	// search is tested against).
	Exhaustive bool
	// Margin (>= 0) is how far, as a share of the target, a simulated
	// point must miss the SLO for the confirmation to skip the points
	// with less capacity on its word (missesBy).
	Margin float64
	// monotoneOnly stops after the monotone search, unconfirmed (the
	// search before the confirmation; tests show what it gets wrong).
	monotoneOnly bool
	// noFootprint skips the footprint pre-pass (tests measure what it
	// saves).
	noFootprint bool
	// Done, if set, hears of each point simulated.
	Done func(k int, sum *results.Summary)
}

// A PlanResult is what a search found.
type PlanResult struct {
	SLO        SLOTarget `json:"slo"`
	Budget     float64   `json:"budget_usd,omitempty"`
	Margin     float64   `json:"margin"`
	Key        string    `json:"key"`
	GridPoints int       `json:"grid_points"`
	OverBudget int       `json:"over_budget"`
	Simulated  int       `json:"simulated"`
	Skipped    int       `json:"skipped"` // grid points within the budget never simulated
	// Implied are the skipped points that, for every policy whose best
	// they undercut, have a simulated point with no less capacity missing
	// the SLO by more than the margin; Dearer cost more than every
	// policy's best, so were never needed.
	Implied int `json:"implied"`
	// SameRun are skipped points whose run, for some policy, is a failing
	// simulated one's (sameRun), the other policies' inferred as Implied.
	SameRun int `json:"same_run"`
	// BeyondFootprint are skipped points past the trace's footprint in a
	// varied tier: repeats, before any simulation, of the point with that
	// tier at the first capacity holding every block the trace names
	// (footprint.go). FootprintBytes is that footprint (0: not computed,
	// no varied tier qualifying).
	BeyondFootprint int          `json:"beyond_footprint"`
	FootprintBytes  int64        `json:"footprint_bytes,omitempty"`
	Dearer          int          `json:"dearer"`
	Best            *PlanChoice  `json:"best"` // nil: nothing meets the SLO
	PerPolicy       []PlanChoice `json:"per_policy"`
	NextCheaper     *PlanFailure `json:"next_cheaper,omitempty"`
	// Violations are pairs of simulated points that break the search's
	// assumption: a policy meets the SLO with less capacity and misses it
	// with more. With any, the choice may not be the grid's optimum.
	Violations []string      `json:"monotonicity_violations,omitempty"`
	Pareto     []PlanOutcome `json:"pareto"`
	Points     []PlanOutcome `json:"simulated_points"`
}

// A PlanChoice is one policy's cheapest point meeting the SLO.
type PlanChoice struct {
	Policy string      `json:"policy"`
	Met    bool        `json:"met"`
	Point  PlanOutcome `json:"point"` // when Met
}

// A PlanOutcome is one simulated (point, policy).
type PlanOutcome struct {
	Name       string   `json:"name"`
	Value      string   `json:"value"`
	Policy     string   `json:"policy"`
	CostUSD    float64  `json:"cost_usd"`
	TTFTp99    float64  `json:"ttft_p99_ms"`
	TPOTp99    float64  `json:"tpot_p99_ms"`
	Attainment *float64 `json:"attainment,omitempty"`
	HitRatio   float64  `json:"hit_ratio"`
	Meets      bool     `json:"meets"`
	Misses     []string `json:"misses,omitempty"` // the SLO terms missed, with by how much
	// From the run's ledger (results.Ledger): what the point costs to run
	// over the trace's span (the hierarchy amortised, plus [gpu]
	// cost_per_hour), per million output tokens, and the shortest life of
	// a rated tier at its write rate. The search ranks by CostUSD, known
	// before simulating; these are reported beside it.
	RunUSD        float64  `json:"run_usd"`
	USDPerMOutput *float64 `json:"usd_per_million_output_tokens,omitempty"`
	LifeYears     *float64 `json:"shortest_life_years,omitempty"`
	LifeTier      string   `json:"shortest_life_tier,omitempty"`
	point         int
}

// A PlanFailure says why the configuration just cheaper than the best
// fails: its own simulation, or (Inferred) one with no less capacity.
type PlanFailure struct {
	Value    string      `json:"value"`
	CostUSD  float64     `json:"cost_usd"`
	Inferred bool        `json:"inferred"`
	SameRun  bool        `json:"same_run,omitempty"` // inferred: Evidence's run is its run (sameRun)
	Evidence PlanOutcome `json:"evidence"`
}

// order is the search's total order: cost, then grid order (so ties go to
// the point an exhaustive sweep lists first).
func (p *Plan) less(a, b int) bool {
	if p.Cost[a] != p.Cost[b] {
		return p.Cost[a] < p.Cost[b]
	}
	return a < b
}

// dominates says point a has no more capacity than b in any dim.
func (p *Plan) le(a, b int) bool {
	for k := range p.Dims {
		if p.Index[a][k] > p.Index[b][k] {
			return false
		}
	}
	return true
}

// outcome is policy j's result at simulated point k.
func (p *Plan) outcome(k, j int, slo SLOTarget) PlanOutcome {
	s := p.sums[k]
	pol := s.Policies[j]
	o := PlanOutcome{Name: p.Points[k].Name, Value: p.Values[k], Policy: pol.Name, CostUSD: p.Cost[k],
		TTFTp99: pol.TTFTms.OrNaN().P99, TPOTp99: pol.TPOTms.OrNaN().P99, Attainment: pol.SLOAttainment,
		HitRatio: pol.HitRatio, point: k}
	if l := pol.Ledger; l != nil {
		o.RunUSD, o.USDPerMOutput = l.Cost.TotalUSD, l.Cost.USDPerMOutputTokens
		for _, t := range l.Tiers {
			if t.LifeYears != nil && (o.LifeYears == nil || *t.LifeYears < *o.LifeYears) {
				o.LifeYears, o.LifeTier = t.LifeYears, t.Tier
			}
		}
	}
	if slo.TTFTp99 > 0 && !(o.TTFTp99 <= slo.TTFTp99) {
		o.Misses = append(o.Misses, fmt.Sprintf("ttft_p99 %.1f ms > %g ms (+%.1f ms)", o.TTFTp99, slo.TTFTp99, o.TTFTp99-slo.TTFTp99))
	}
	if slo.TPOTp99 > 0 && !(o.TPOTp99 <= slo.TPOTp99) {
		o.Misses = append(o.Misses, fmt.Sprintf("tpot_p99 %.2f ms > %g ms (+%.2f ms)", o.TPOTp99, slo.TPOTp99, o.TPOTp99-slo.TPOTp99))
	}
	if slo.Attainment > 0 {
		a := math.NaN()
		if o.Attainment != nil {
			a = *o.Attainment
		}
		if !(a >= slo.Attainment) {
			o.Misses = append(o.Misses, fmt.Sprintf("attainment %.4f < %g (-%.4f)", a, slo.Attainment, slo.Attainment-a))
		}
	}
	if slo.LifeYears > 0 && o.LifeYears != nil && !(*o.LifeYears >= slo.LifeYears) {
		o.Misses = append(o.Misses, fmt.Sprintf("life of %s %.3g years < %g", o.LifeTier, *o.LifeYears, slo.LifeYears))
	}
	o.Meets = len(o.Misses) == 0
	return o
}

// Search finds, for every policy, the cheapest point within the budget
// meeting o.SLO. For each row (every combination of the dims but the
// last) it binary-searches the last dim for the first passing capacity,
// among the points cheaper than the policy's best so far; a status is
// inferred by monotonicity when it can be, else the point is simulated
// (every policy at once, as a sweep point).
func (p *Plan) Search(ctx context.Context, o PlanOptions) (*PlanResult, error) {
	n := len(p.Points)
	p.sums = make([]*results.Summary, n)
	p.status = make([][]planStatus, n)
	var runErr error
	var nsim int
	release, err := SpoolScenarios(ctx, p.Points...)
	if err != nil {
		return nil, err
	}
	defer release()
	within := func(k int) bool { return o.Budget <= 0 || p.Cost[k] <= o.Budget }
	// The footprint pre-pass: points past the trace's footprint repeat a
	// cheaper point's run (earlier in cost order, ties included: it comes
	// first in the grid), so they can never be the answer. The monotone
	// search still walks them, so that its path is the one it takes
	// without the pre-pass, but learns each one's status from the point it
	// repeats (simulating that one at most once); the confirmation leaves
	// them out.
	rep := make([]int, n)
	for k := range rep {
		rep[k] = k
	}
	var fp int64
	if ds := p.footprintDims(o.SLO); !o.Exhaustive && !o.noFootprint && len(ds) > 0 {
		if fp, err = TraceFootprint(ctx, p.Points[0], o.SkipBadLines, o.Limit); err != nil {
			return nil, err
		}
		rep = p.footprintReps(ds, fp)
	}
	inGrid := func(k int) bool { return within(k) && rep[k] == k }
	simulate := func(k int) error {
		sum, err := p.runPoint(ctx, k, o.Options)
		if err != nil {
			return err
		}
		nsim++
		p.sums[k] = sum
		p.status[k] = make([]planStatus, len(sum.Policies))
		for j := range sum.Policies {
			p.status[k][j] = fail
			if p.outcome(k, j, o.SLO).Meets {
				p.status[k][j] = pass
			}
		}
		if o.Done != nil {
			o.Done(k, sum)
		}
		return nil
	}
	// infer is point k's status for policy j from the simulated points.
	infer := func(k, j int) planStatus {
		if p.sums[k] != nil {
			return p.status[k][j]
		}
		for m := range p.sums {
			if p.sums[m] == nil {
				continue
			}
			if p.status[m][j] == pass && p.le(m, k) {
				return pass
			}
			if p.status[m][j] == fail && p.le(k, m) {
				return fail
			}
		}
		return unknown
	}
	statusOf := func(k, j int) planStatus {
		k = rep[k] // a point past the footprint: the run it repeats
		if runErr != nil {
			return fail
		}
		if s := infer(k, j); s != unknown {
			return s
		}
		if err := simulate(k); err != nil {
			runErr = err
			return fail
		}
		return p.status[k][j]
	}
	npol := len(p.Base.Policies)
	best := make([]int, npol)
	for j := range best {
		best[j] = -1
	}
	last := len(p.Dims) - 1
	width := len(p.Dims[last].Values)
	if o.Exhaustive {
		for k := range p.Points {
			if within(k) {
				if err := simulate(k); err != nil {
					return nil, err
				}
			}
		}
		for k := range p.Points {
			for j := 0; j < npol && p.sums[k] != nil; j++ {
				if p.status[k][j] == pass && (best[j] < 0 || p.less(k, best[j])) {
					best[j] = k
				}
			}
		}
	} else {
		for j := 0; j < npol && runErr == nil; j++ {
			for row := 0; row < n && runErr == nil; row += width {
				// hi: the last point of the row worth knowing (cheaper
				// than the best so far, within the budget).
				hi := -1
				for c := 0; c < width; c++ {
					k := row + c
					if within(k) && (best[j] < 0 || p.less(k, best[j])) {
						hi = c
					} else {
						break
					}
				}
				lo, top := 0, hi+1
				for lo < top {
					mid := (lo + top) / 2
					if statusOf(row+mid, j) == pass {
						top = mid
					} else {
						lo = mid + 1
					}
				}
				if lo <= hi && runErr == nil {
					best[j] = rep[row+lo] // as cheap, and no dearer
				}
			}
		}
		if runErr != nil {
			return nil, runErr
		}
		// The confirmation: the bests above rest on monotone inference,
		// which kvsim's queueing and slow loads can break. Walk every
		// point in cost order up to each policy's best; a point is
		// skipped for a policy only when a simulated point with no less
		// capacity misses the SLO by more than the margin, otherwise it
		// is simulated, and a policy's best is always a simulated pass.
		order := make([]int, 0, n)
		for k := range p.Points {
			if inGrid(k) {
				order = append(order, k)
			}
		}
		sort.Slice(order, func(a, b int) bool { return p.less(order[a], order[b]) })
		if o.monotoneOnly {
			order = nil
		}
		open := func(k, j int) bool { return best[j] < 0 || !p.less(best[j], k) }
		for _, k := range order {
			need := false
			for j := 0; j < npol && p.sums[k] == nil; j++ {
				need = need || open(k, j) && (k == best[j] || p.clearFail(k, j, o) < 0 && p.sameRun(k, j, o.SLO) < 0)
			}
			if need {
				if err := simulate(k); err != nil {
					return nil, err
				}
			}
			for j := 0; j < npol && p.sums[k] != nil; j++ {
				switch {
				case !open(k, j):
				case p.status[k][j] == pass:
					best[j] = k
				case k == best[j]:
					best[j] = -1 // inferred to pass, simulated to fail
				}
			}
		}
	}
	r := &PlanResult{SLO: o.SLO, Budget: o.Budget, Margin: o.Margin, Key: p.Key, GridPoints: n, Simulated: nsim, FootprintBytes: fp}
	for k := range p.Points {
		switch {
		case !within(k):
			r.OverBudget++
		case p.sums[k] != nil:
		case rep[k] != k:
			r.BeyondFootprint++
		default:
			dearer := true
			for j := 0; j < npol; j++ {
				dearer = dearer && best[j] >= 0 && p.less(best[j], k)
			}
			margin := true
			for j := 0; j < npol; j++ {
				margin = margin && (best[j] >= 0 && p.less(best[j], k) || p.clearFail(k, j, o) >= 0)
			}
			switch {
			case dearer:
				r.Dearer++
			case margin:
				r.Implied++
			default:
				r.SameRun++
			}
		}
	}
	r.Skipped = n - r.OverBudget - nsim
	var bestAll = -1
	var bestPol int
	for j := 0; j < npol; j++ {
		c := PlanChoice{Policy: p.Base.Policies[j].Name}
		if best[j] >= 0 {
			c.Met, c.Point = true, p.outcome(best[j], j, o.SLO)
			if bestAll < 0 || p.less(best[j], bestAll) {
				bestAll, bestPol = best[j], j
			}
		}
		r.PerPolicy = append(r.PerPolicy, c)
	}
	if bestAll >= 0 {
		c := r.PerPolicy[bestPol]
		r.Best = &c
		r.NextCheaper = p.nextCheaper(bestAll, bestPol, within, rep, o)
	}
	for k := range p.Points {
		for j := 0; p.sums[k] != nil && j < len(p.sums[k].Policies); j++ {
			r.Points = append(r.Points, p.outcome(k, j, o.SLO))
		}
	}
	for m := range p.Points {
		for k := range p.Points {
			if m == k || p.sums[m] == nil || p.sums[k] == nil || !p.le(m, k) {
				continue
			}
			for j := 0; j < npol; j++ {
				if p.status[m][j] == pass && p.status[k][j] == fail {
					r.Violations = append(r.Violations, fmt.Sprintf("%s meets the SLO at %s but misses it at %s", p.Base.Policies[j].Name, p.Label(p.Values[m]), p.Label(p.Values[k])))
				}
			}
		}
	}
	r.Pareto = pareto(r.Points)
	return r, nil
}

// nextCheaper explains why the point just before best (in cost order,
// within the budget) fails for policy j: by its simulation, or by the
// simulated failing point with no less capacity that implies it; a point
// past the footprint by the point whose run it repeats (rep).
func (p *Plan) nextCheaper(best, j int, within func(int) bool, rep []int, o PlanOptions) *PlanFailure {
	prev := -1
	for k := range p.Points {
		if within(k) && p.less(k, best) && (prev < 0 || p.less(prev, k)) {
			prev = k
		}
	}
	if prev < 0 {
		return nil
	}
	f := p.failure(rep[prev], j, o)
	if f == nil {
		return nil
	}
	if rep[prev] != prev { // its run is rep's, whatever told rep's
		f.Inferred, f.SameRun = true, true
	}
	f.Value, f.CostUSD = p.Values[prev], p.Cost[prev]
	return f
}

// failure is the evidence that point k fails for policy j: its own
// simulation, a simulated point with no less capacity missing by over the
// margin, or a failing run k's repeats; nil when none is known.
func (p *Plan) failure(k, j int, o PlanOptions) *PlanFailure {
	f := &PlanFailure{Value: p.Values[k], CostUSD: p.Cost[k]}
	if p.sums[k] != nil {
		f.Evidence = p.outcome(k, j, o.SLO)
		return f
	}
	ev := p.clearFail(k, j, o)
	if ev < 0 {
		ev = p.sameRun(k, j, o.SLO)
		f.SameRun = ev >= 0
	}
	if ev < 0 {
		return nil
	}
	f.Inferred, f.Evidence = true, p.outcome(ev, j, o.SLO)
	return f
}

// clearFail is the cheapest simulated point with no less capacity than k
// in any dim that misses the SLO for policy j by more than the margin
// (missesBy), or -1: the evidence that skips k for j.
func (p *Plan) clearFail(k, j int, o PlanOptions) int {
	ev := -1
	for m := range p.Points {
		if p.sums[m] != nil && p.le(k, m) && p.missesBy(m, j, o.SLO, o.Margin) && (ev < 0 || p.less(m, ev)) {
			ev = m
		}
	}
	return ev
}

// sameRun is a simulated point whose run of policy j fails and is k's run
// too, or -1. Each varied tier where the two differ is one that never
// filled at that point (no eviction, no drop, its peak below both
// capacities), is not HBM (whose free space the engine schedules by), has
// no watermark policy (policy.Batcher evicts by the used share), and is
// not held to a life: its capacity then decided nothing in the run.
func (p *Plan) sameRun(k, j int, slo SLOTarget) int {
	for m := range p.Points {
		if p.sums[m] == nil || p.status[m][j] != fail || m == k {
			continue
		}
		pol := p.sums[m].Policies[j]
		if len(pol.Instances) > 0 {
			return -1 // a cluster's per-instance tiers: not checked here
		}
		same := true
		for d, dim := range p.Dims {
			if p.Index[k][d] == p.Index[m][d] {
				continue
			}
			ti := slices.IndexFunc(p.Base.Tiers, func(t scenario.Tier) bool { return t.Name == dim.Tier })
			tk, tm := p.Points[k].Tiers[ti], p.Points[m].Tiers[ti]
			same = same && ti > 0 && tk.Kind != "hbm" && pol.Evictions[dim.Tier] == 0 && pol.Drops[dim.Tier] == 0 &&
				pol.PeakUsedBytes[dim.Tier] < min(tk.Capacity, tm.Capacity) &&
				!(slo.LifeYears > 0 && (tk.DWPD > 0 || tk.TBW > 0)) && !p.batcher(m, j, ti)
		}
		if same {
			return m
		}
	}
	return -1
}

// batcher says policy j evicts by a watermark in tier ti at point k.
func (p *Plan) batcher(k, j, ti int) bool {
	sc := p.Points[k]
	pe := sc.Policies[j]
	pol, err := policy.New(pe.TierEviction(ti), policy.Config{Capacity: sc.Tiers[ti].Capacity, Params: pe.TierParams(ti)})
	if err != nil {
		return true // an offline policy: not checked
	}
	_, ok := pol.(policy.Batcher)
	return ok
}

// missesBy says simulated point k misses some term of the SLO for policy
// j by more than the share margin: a p99 above target x (1+margin), an
// attainment below target x (1-margin), a life below target / (1+margin).
// A missing metric misses by any margin.
func (p *Plan) missesBy(k, j int, slo SLOTarget, margin float64) bool {
	if p.status[k][j] != fail {
		return false
	}
	o := p.outcome(k, j, slo)
	switch {
	case slo.TTFTp99 > 0 && !(o.TTFTp99 <= slo.TTFTp99*(1+margin)):
		return true
	case slo.TPOTp99 > 0 && !(o.TPOTp99 <= slo.TPOTp99*(1+margin)):
		return true
	case slo.Attainment > 0 && (o.Attainment == nil || !(*o.Attainment >= slo.Attainment*(1-margin))):
		return true
	case slo.LifeYears > 0 && o.LifeYears != nil && !(*o.LifeYears*(1+margin) >= slo.LifeYears):
		return true
	}
	return false
}

// pareto keeps the outcomes no other beats on both cost and TTFT p99 (the
// cheaper first; ties to the earlier).
func pareto(all []PlanOutcome) []PlanOutcome {
	s := slices.Clone(all)
	sort.SliceStable(s, func(a, b int) bool {
		if s[a].CostUSD != s[b].CostUSD {
			return s[a].CostUSD < s[b].CostUSD
		}
		return s[a].TTFTp99 < s[b].TTFTp99
	})
	var front []PlanOutcome
	minT := math.Inf(1)
	for _, o := range s {
		if o.TTFTp99 < minT {
			front = append(front, o)
			minT = o.TTFTp99
		}
	}
	return front
}

// runPoint simulates point k as kvsim sweep does: into its folder under
// o.Out when set (reusing the folder when it already holds this run's
// complete set), else in memory.
func (p *Plan) runPoint(ctx context.Context, k int, o Options) (*results.Summary, error) {
	sc := p.Points[k]
	o.Sweep = &results.SweepPoint{Key: p.Key, Value: p.Values[k]}
	if o.Out == "" {
		return Run(ctx, sc, o)
	}
	r, err := OpenResults(ctx, []string{sc.Name}, false, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	id, err := runID(sc, TraceOptions(sc, o.SkipBadLines, o.Limit), o.Sweep)
	if err != nil {
		return nil, err
	}
	if sum, ok := readDone(filepath.Join(o.Out, sc.Name), id); ok {
		return sum, nil
	}
	return r.Run(ctx, sc, o)
}
