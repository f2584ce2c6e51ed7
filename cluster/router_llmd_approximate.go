package cluster

import (
	"kvsim/core"
	"kvsim/param"
)

func init() {
	RegisterRouter(RouterSpec{Name: "llmd_approximate", Rank: 7,
		Brief: "llm-d's approximate prefix scorer (no KV events), mixed as llmd_precise; the highest score",
		Reads: "`Queued`, `KVUsage`", State: "an LRU of routed prefixes per instance; the metrics last scraped",
		Keys: []param.Key{
			{Name: "approx_lru_tokens", Type: param.Int, Default: int64(500000), Min: param.AtLeast1, Example: "500000",
				Doc: "llmd_approximate: tokens of routed prefixes remembered per instance, least recent dropped (31250 blocks of 16)"},
			{Name: "approx_max_tokens", Type: param.Int, Default: int64(4096), Min: param.AtLeast1, Example: "4096",
				Doc: "llmd_approximate: the longest prefix matched, in tokens (256 blocks of 16)"},
			{Name: "approx_bytes_per_token", Type: param.Number, Default: 4.0, Min: param.Above0, Example: "4",
				Doc: "llmd_approximate: the prompt text's bytes per token; the scorer counts 4 a token, so its LRU and match limit cover approx_*_tokens x 4 / this tokens"},
		},
		New: func(p Params) Router { return newLLMDApprox(p) }})
}

// llmdApprox is the gateway's prefix-cache scorer: no events, a guess of
// each instance's cache from what was routed to it.
type llmdApprox struct {
	p              Params
	mix            llmdMix
	lruTok, maxTok int
	trees          []routeTree
}

// newLLMDApprox converts the limits, which the scorer counts in tokens of
// 4 bytes (hashed bytes / 4), to the prompt's own tokens.
func newLLMDApprox(p Params) *llmdApprox {
	scale := 4 / p.Keys.Get("approx_bytes_per_token").(float64)
	tok := func(k string) int { return int(float64(p.Keys.Get(k).(int64)) * scale) }
	return &llmdApprox{p: p, mix: newLLMDMix(p), lruTok: tok("approx_lru_tokens"), maxTok: tok("approx_max_tokens")}
}

func (*llmdApprox) Name() string { return "llmd_approximate" }

// Route scores each instance matched blocks / the request's blocks (up to
// the match limit), mixes, picks, and records the request's blocks as the
// chosen instance's.
func (l *llmdApprox) Route(now int64, r *core.Request, v View) (int, bool) {
	n := v.Instances()
	if n <= 0 {
		return 0, true
	}
	bt := blockTokens(l.p, r)
	for len(l.trees) < n {
		// The bound is set by the first request's block size: a trace has one.
		l.trees = append(l.trees, newRouteTree(max(l.lruTok/bt, 1)))
	}
	blocks := r.Blocks[:min(len(r.Blocks), max(l.maxTok/bt, 1))]
	l.mix.reset(n)
	for i := range n {
		if len(blocks) > 0 {
			l.mix.prefix[i] = float64(l.trees[i].match(blocks)) / float64(len(blocks))
		}
	}
	best := l.mix.pick(now, v, n)
	l.trees[best].insert(blocks)
	return best, false
}
