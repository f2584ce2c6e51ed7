package cluster

import (
	"math"

	"kvsim/core"
	"kvsim/param"
)

func init() {
	RegisterRouter(RouterSpec{Name: "llmd_precise", Rank: 6,
		Brief: "llm-d's precise prefix scorer, mixed with queue and KV-utilisation scorers; the highest score",
		Reads: "`Tiers`, `Queued`, `KVUsage`", State: "the metrics last scraped (`llmd_scrape_ms`)",
		Keys: []param.Key{
			{Name: "llmd_prefix_weight", Type: param.Number, Default: 3.0, Min: param.AtLeast0, Example: "3",
				Doc: "llmd_precise, llmd_approximate: profile weight of the prefix scorer"},
			{Name: "llmd_queue_weight", Type: param.Number, Default: 1.0, Min: param.AtLeast0, Example: "1",
				Doc: "llmd_precise, llmd_approximate: profile weight of the queue scorer (waiting requests, min-max normalised)"},
			{Name: "llmd_kv_weight", Type: param.Number, Default: 1.0, Min: param.AtLeast0, Example: "1",
				Doc: "llmd_precise, llmd_approximate: profile weight of the KV-utilisation scorer (1 - usage)"},
			{Name: "llmd_gpu_weight", Type: param.Number, Default: 1.0, Min: param.AtLeast0, Example: "1.0",
				Doc: "llmd_precise: score of a prefix block whose fastest copy is in hbm (llm-d's gpu medium)"},
			{Name: "llmd_cpu_weight", Type: param.Number, Default: 0.8, Min: param.AtLeast0, Example: "0.8",
				Doc: "llmd_precise: score of a prefix block whose fastest copy is in tier 1 (llm-d's cpu medium)"},
			{Name: "llmd_storage_weight", Type: param.Number, Default: 0.3, Min: param.AtLeast0, Example: "0.3",
				Doc: "llmd_precise: score of a prefix block whose fastest copy is in tier 2 or below (storage; llm-d's open proposal)"},
			{Name: "llmd_scrape_ms", Type: param.Number, Default: 50.0, Min: param.AtLeast0, Example: "50",
				Doc: "llmd_precise, llmd_approximate: interval at which the queue and KV-utilisation scorers' metrics are scraped (ms; 0: read live)"},
		},
		New: func(p Params) Router { return newLLMDPrecise(p) }})
}

// llmdMix is llm-d's scheduling profile: weighted scorers, max-score picker.
type llmdMix struct {
	prefixW, queueW, kvW float64
	prefix               []float64 // per instance: the prefix scorer's score
	seen                 []bool    // the prefix scorer scored it (precise: held block 0)
	// The scraped metrics: read at the first arrival of scrape interval
	// tick, held until the next interval (scrapeNs 0: read live).
	scrapeNs int64
	tick     int64
	queued   []int
	usage    []float64
}

func newLLMDMix(p Params) llmdMix {
	g := func(k string) float64 { return p.Keys.Get(k).(float64) }
	return llmdMix{prefixW: g("llmd_prefix_weight"), queueW: g("llmd_queue_weight"), kvW: g("llmd_kv_weight"),
		scrapeNs: int64(math.Round(g("llmd_scrape_ms") * 1e6)), tick: -1}
}

// metrics are the waiting queues and KV usage the queue and KV scorers
// read at now: live, or as scraped at the first arrival of now's interval
// (the gateway scrapes each pod every refresh interval; requests routed
// since are not in the figures).
func (m *llmdMix) metrics(now int64, v View, n int) {
	if m.scrapeNs > 0 && now/m.scrapeNs == m.tick && len(m.queued) == n {
		return
	}
	m.tick = -1
	if m.scrapeNs > 0 {
		m.tick = now / m.scrapeNs
	}
	m.queued, m.usage = m.queued[:0], m.usage[:0]
	for i := range n {
		m.queued = append(m.queued, v.Queued(i))
		m.usage = append(m.usage, v.KVUsage(i))
	}
}

// pick sums the weighted scores and takes the highest, the lowest index on
// ties (llm-d's max-score picker shuffles equal ones). The queue scorer is
// min-max over the waiting queues (all equal: 1 each); the KV one 1 - usage.
func (m *llmdMix) pick(now int64, v View, n int) int {
	m.metrics(now, v, n)
	qlo, qhi := int(^uint(0)>>1), -1
	for _, q := range m.queued {
		qlo, qhi = min(qlo, q), max(qhi, q)
	}
	best, bestScore := 0, -1.0
	for i := range n {
		queue := 1.0
		if qhi > qlo {
			queue = float64(qhi-m.queued[i]) / float64(qhi-qlo)
		}
		s := m.prefixW*m.prefix[i] + m.queueW*queue + m.kvW*(1-m.usage[i])
		if s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// reset sizes the per-instance scratch for n instances.
func (m *llmdMix) reset(n int) {
	m.prefix = append(m.prefix[:0], make([]float64, n)...)
	m.seen = append(m.seen[:0], make([]bool, n)...)
}

// normalise is the precise scorer's min-max over the instances it scored
// (all equal: 1 each); the others score 0.
func (m *llmdMix) normalise() {
	lo, hi, any := 0.0, 0.0, false
	for i, s := range m.prefix {
		if !m.seen[i] {
			continue
		}
		if !any {
			lo, hi, any = s, s, true
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	for i, s := range m.prefix {
		switch {
		case !m.seen[i]:
			m.prefix[i] = 0
		case hi == lo:
			m.prefix[i] = 1
		default:
			m.prefix[i] = (s - lo) / (hi - lo)
		}
	}
}

// llmdPrecise is llm-d's precise prefix-cache scorer in its default profile.
type llmdPrecise struct {
	p      Params
	mix    llmdMix
	medium [3]float64 // gpu, cpu, storage
	tiers  []uint8
}

func newLLMDPrecise(p Params) *llmdPrecise {
	g := func(k string) float64 { return p.Keys.Get(k).(float64) }
	return &llmdPrecise{p: p, mix: newLLMDMix(p),
		medium: [3]float64{g("llmd_gpu_weight"), g("llmd_cpu_weight"), g("llmd_storage_weight")}}
}

func (*llmdPrecise) Name() string { return "llmd_precise" }

func (l *llmdPrecise) Route(now int64, r *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	l.mix.reset(n)
	for i := range n {
		l.mix.prefix[i], l.mix.seen[i] = l.score(r, v, i)
	}
	l.mix.normalise()
	return l.mix.pick(now, v, n), false
}

// score is LongestPrefixScorer's for instance i: the sum, over the leading
// blocks it holds in any medium, of the best medium weight of each; held
// is false without block 0. A sliding-window model cuts the prefix to
// where its window is held too (hybridPrefix).
func (l *llmdPrecise) score(r *core.Request, v View, i int) (float64, bool) {
	l.tiers = v.Tiers(i, r.Blocks, l.tiers[:0])
	k := hybridPrefix(l.p, r, v, i, len(l.tiers))
	if k == 0 {
		return 0, false
	}
	s := 0.0
	for _, t := range l.tiers[:k] {
		s += l.medium[min(int(t), 2)]
	}
	return s, true
}

// WindowView is what a View tells of a model with sliding-window layers:
// whether instance i's sliding-window group holds block b (a real engine
// frees those blocks once they leave every running request's window). The
// cluster's View answers it from the prompts each instance ran when
// Config.SlidingWindow is set.
type WindowView interface {
	WindowHeld(i int, b core.Block) bool
}

// hybridPrefix is llm-d's hybrid rule: of the k leading blocks the
// full-attention group holds, the longest j <= k whose last w blocks
// (w = the window in blocks; all of them when j <= w) the sliding-window
// group also holds: a prefix the window cannot continue from is no hit.
func hybridPrefix(p Params, r *core.Request, v View, i, k int) int {
	wv, ok := v.(WindowView)
	if p.SlidingWindow <= 0 || !ok || k == 0 {
		return k
	}
	bt := blockTokens(p, r)
	w := (p.SlidingWindow + bt - 1) / bt
	for j := k; j > 0; j-- {
		run := 0
		for b := j - 1; b >= 0 && wv.WindowHeld(i, r.Blocks[b]); b-- {
			run++
			if run >= w {
				break
			}
		}
		if run >= min(w, j) {
			return j
		}
	}
	return 0
}
