package events

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
)

// A request log joined to a recording. The log says what events cannot:
// where a request begins, how long its prompt is and when its first token
// came; the events say which blocks entered GPU memory and when. Neither
// carries the other's key (request logs have no block hashes, events no
// request ids) and their clocks differ by an unknown offset, so the join
// is by time: a request's prefill stores its missed prompt blocks between
// its arrival and its first token.

// JoinRequest is one request of a request log (validate's records).
type JoinRequest struct {
	Line         int    // in its file, for messages
	ID           string // the log's id, "" if none
	ArrivalNs    int64  // after the log's first arrival
	TTFTNs       int64  // arrival to first token
	InputTokens  int
	OutputTokens int
}

// JoinOptions configure Join.
type JoinOptions struct {
	WhatIf WhatIfOptions
	// Offset is the events' ts (seconds) of the log's first arrival, when
	// known; otherwise (HaveOffset false) it is estimated.
	Offset     float64
	HaveOffset bool
	// Slack widens each request's window [arrival, arrival+TTFT] on both
	// sides (seconds): clocks read at different points.
	Slack float64
	// CeilBlocks counts a prompt's last partial block (kvsim stores it;
	// vLLM hashes, so publishes, full blocks only).
	CeilBlocks bool
}

// JoinedRequest is what the join says of one request.
type JoinedRequest struct {
	Line         int     `json:"line"`
	ID           string  `json:"id,omitempty"`
	ArrivalMs    float64 `json:"arrival_ms"`
	InputTokens  int     `json:"input_tokens"`
	PromptBlocks int64   `json:"prompt_blocks"`
	// Instance whose stores it claimed, -1 when none.
	Instance int `json:"instance"`
	// Stored: GPU stores claimed (its prompt blocks that missed the GPU);
	// of them Loaded came from a lower medium, Recomputed were computed.
	Stored     int64 `json:"gpu_stores"`
	Loaded     int64 `json:"loaded"`
	Recomputed int64 `json:"recomputed"`
	// HitBlocks = PromptBlocks - Stored: GPU prefix hits, which publish
	// nothing (meaningful for matched requests only).
	HitBlocks int64 `json:"gpu_hit_blocks"`
	HitTokens int64 `json:"gpu_hit_tokens"`
	// Saved[i]: prompt tokens candidate i would have served instead of
	// recomputing; Share[i] = Saved[i] / tokens recomputed (the share of
	// the prefill's compute, the TTFT-relevant part).
	Saved  []int64   `json:"tokens_saved"`
	Share  []float64 `json:"ttft_share"`
	Reason string    `json:"unmatched,omitempty"`
}

// JoinCandidate sums one candidate tier over the joined requests.
type JoinCandidate struct {
	Capacity       int64   `json:"capacity_blocks"`
	TokensSaved    int64   `json:"prefill_tokens_saved"`
	RequestsHelped int64   `json:"requests_helped"`
	MeanShare      float64 `json:"mean_ttft_share"` // over matched requests that recomputed
}

// JoinResult is Join's answer.
type JoinResult struct {
	WhatIf          *WhatIfResult  `json:"whatif"`
	Offset          float64        `json:"offset_s"`
	OffsetEstimated bool           `json:"offset_estimated"`
	Requests        int            `json:"requests"`
	Matched         int            `json:"matched"`
	Unmatched       map[string]int `json:"unmatched"`
	// GPU stores claimed by a request, and left unclaimed (decode blocks,
	// requests not in the log, windows that missed).
	StoresClaimed   int64 `json:"gpu_stores_claimed"`
	StoresUnclaimed int64 `json:"gpu_stores_unclaimed"`
	// Over matched requests: prompt blocks, and GPU hits (prompt blocks
	// not stored), which the events alone cannot see.
	PromptBlocks int64           `json:"prompt_blocks"`
	HitBlocks    int64           `json:"gpu_hit_blocks"`
	HitRatio     float64         `json:"gpu_hit_ratio"`
	Candidates   []JoinCandidate `json:"candidates"`
	PerRequest   []JoinedRequest `json:"requests_joined"`
}

// Reasons a request is not matched.
const (
	ReasonShort   = "prompt shorter than one block"
	ReasonOutside = "window outside the recording"
	ReasonNone    = "no GPU store left in its window (every prompt block hit, or claimed by another request)"
)

// store is one GPU store as the what-if replay saw it.
type store struct {
	frame  int
	ts     float64
	inst   uint32
	served bool
	hits   uint64
	tokens int64
}

// group is the GPU stores of one frame.
type group struct {
	ts    float64
	inst  uint32
	first int // index of its first store
	n     int
}

// JoinFile joins the request log reqs to the recording at path.
func JoinFile(path string, reqs []JoinRequest, opt JoinOptions) (*JoinResult, error) {
	if len(opt.WhatIf.Capacities) == 0 {
		// The same default spread as WhatIfFile.
		wi, err := WhatIfFile(path, opt.WhatIf)
		if err != nil {
			return nil, err
		}
		for _, c := range wi.Candidates {
			opt.WhatIf.Capacities = append(opt.WhatIf.Capacities, c.Capacity)
		}
	}
	if len(opt.WhatIf.Capacities) > 64 {
		return nil, fmt.Errorf("at most 64 candidate capacities with a request log, got %d", len(opt.WhatIf.Capacities))
	}
	var stores []store
	wopt := opt.WhatIf
	wopt.onStore = func(frame int, ts float64, inst uint32, served bool, hits uint64, tokens int64) {
		stores = append(stores, store{frame, ts, inst, served, hits, tokens})
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	wi, err := whatIf(f, path, wopt)
	if err != nil {
		return nil, err
	}
	res := join(stores, reqs, opt)
	res.WhatIf = wi
	return res, nil
}

func join(stores []store, reqs []JoinRequest, opt JoinOptions) *JoinResult {
	bt := opt.WhatIf.BlockTokens
	if bt <= 0 {
		bt = 16
	}
	var groups []group
	for i, s := range stores {
		if n := len(groups); n > 0 && groups[n-1].first+groups[n-1].n == i && stores[groups[n-1].first].frame == s.frame {
			groups[n-1].n++
			continue
		}
		groups = append(groups, group{ts: s.ts, inst: s.inst, first: i, n: 1})
	}
	// Frames come in receive order; the join wants the engines' time.
	slices.SortStableFunc(groups, func(a, b group) int { return cmp.Compare(a.ts, b.ts) })
	res := &JoinResult{Requests: len(reqs), Unmatched: map[string]int{}, Offset: opt.Offset}
	if !opt.HaveOffset {
		res.Offset, res.OffsetEstimated = estimateOffset(groups, reqs, bt, opt), true
	}
	claims := assign(groups, reqs, res.Offset, bt, opt)
	ncand := len(opt.WhatIf.Capacities)
	res.Candidates = make([]JoinCandidate, ncand)
	shareN := make([]int64, ncand)
	for i, c := range opt.WhatIf.Capacities {
		res.Candidates[i].Capacity = c
	}
	for i, r := range reqs {
		jr := JoinedRequest{Line: r.Line, ID: r.ID, ArrivalMs: float64(r.ArrivalNs) / 1e6, InputTokens: r.InputTokens,
			PromptBlocks: promptBlocks(r.InputTokens, bt, opt.CeilBlocks), Instance: -1,
			Saved: make([]int64, ncand), Share: make([]float64, ncand)}
		cl := claims[i]
		for _, c := range cl.from {
			g := groups[c.group]
			jr.Instance = int(g.inst)
			for _, s := range stores[g.first+c.off : g.first+c.off+c.n] {
				jr.Stored++
				if s.served {
					jr.Loaded++
					continue
				}
				jr.Recomputed++
				for k := range ncand {
					if s.hits&(1<<k) != 0 {
						jr.Saved[k] += s.tokens
					}
				}
			}
		}
		switch {
		case jr.Stored > 0:
			res.Matched++
			jr.HitBlocks = jr.PromptBlocks - jr.Stored
			jr.HitTokens = jr.HitBlocks * bt
			res.StoresClaimed += jr.Stored
			res.PromptBlocks += jr.PromptBlocks
			res.HitBlocks += jr.HitBlocks
			for k := range ncand {
				res.Candidates[k].TokensSaved += jr.Saved[k]
				if jr.Saved[k] > 0 {
					res.Candidates[k].RequestsHelped++
				}
				if jr.Recomputed > 0 {
					jr.Share[k] = float64(jr.Saved[k]) / float64(jr.Recomputed*bt)
					res.Candidates[k].MeanShare += jr.Share[k]
					shareN[k]++
				}
			}
		default:
			jr.Reason = cl.reason
			res.Unmatched[cl.reason]++
		}
		res.PerRequest = append(res.PerRequest, jr)
	}
	for k := range ncand {
		if shareN[k] > 0 {
			res.Candidates[k].MeanShare /= float64(shareN[k])
		}
	}
	res.StoresUnclaimed = int64(len(stores)) - res.StoresClaimed
	if res.PromptBlocks > 0 {
		res.HitRatio = float64(res.HitBlocks) / float64(res.PromptBlocks)
	}
	return res
}

func promptBlocks(tokens int, bt int64, ceil bool) int64 {
	n := int64(tokens) / bt
	if ceil && int64(tokens)%bt != 0 {
		n++
	}
	return n
}

// claim is part of a group a request took.
type claim struct{ group, off, n int }

type reqClaims struct {
	from   []claim
	reason string
}

// assign gives each group's stores to requests whose window holds the
// group, nearest to the request's arrival first (a prefill stores its
// first blocks soonest after it starts), each request taking at most its
// prompt blocks and from one instance only (a request runs on one): one
// block each first, then the rest.
func assign(groups []group, reqs []JoinRequest, offset float64, bt int64, opt JoinOptions) []reqClaims {
	out := make([]reqClaims, len(reqs))
	if len(groups) == 0 {
		for i := range out {
			out[i].reason = ReasonOutside
		}
		return out
	}
	first, last := groups[0].ts, groups[len(groups)-1].ts
	type pair struct {
		dist     float64
		req, grp int
	}
	var pairs []pair
	need := make([]int64, len(reqs))
	for i, r := range reqs {
		need[i] = promptBlocks(r.InputTokens, bt, opt.CeilBlocks)
		lo := offset + float64(r.ArrivalNs)/1e9
		hi := lo + float64(r.TTFTNs)/1e9 + opt.Slack
		lo -= opt.Slack
		switch {
		case need[i] == 0:
			out[i].reason = ReasonShort
			continue
		case hi < first || lo > last:
			out[i].reason = ReasonOutside
			continue
		}
		out[i].reason = ReasonNone
		a := offset + float64(r.ArrivalNs+r.TTFTNs)/1e9
		for g := searchGroups(groups, lo); g < len(groups) && groups[g].ts <= hi; g++ {
			pairs = append(pairs, pair{math.Abs(groups[g].ts - a), i, g})
		}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.req, b.req), cmp.Compare(a.grp, b.grp))
	})
	used := make([]int, len(groups))
	inst := make([]int64, len(reqs))
	for i := range inst {
		inst[i] = -1
	}
	// Two rounds: first one block each, so that requests admitted
	// together share their batch's stores; then the rest of each need.
	for round := range 2 {
		for _, p := range pairs {
			g := groups[p.grp]
			left := g.n - used[p.grp]
			if need[p.req] == 0 || left == 0 || inst[p.req] >= 0 && inst[p.req] != int64(g.inst) {
				continue
			}
			if round == 0 && inst[p.req] >= 0 {
				continue
			}
			k := int(min(int64(left), need[p.req]))
			if round == 0 {
				k = 1
			}
			cs := out[p.req].from
			if n := len(cs); n > 0 && cs[n-1].group == p.grp && cs[n-1].off+cs[n-1].n == used[p.grp] {
				cs[n-1].n += k
			} else {
				out[p.req].from = append(cs, claim{p.grp, used[p.grp], k})
			}
			used[p.grp] += k
			need[p.req] -= int64(k)
			inst[p.req] = int64(g.inst)
		}
	}
	return out
}

// searchGroups is the first group at or after ts.
func searchGroups(groups []group, ts float64) int {
	i, _ := slices.BinarySearchFunc(groups, ts, func(g group, t float64) int { return cmp.Compare(g.ts, t) })
	return i
}

// estimateOffset tries the offsets that put one of the first requests'
// arrivals on one of the first groups, and keeps the one under which the
// first requests match most (then claim the most stores; ties: the
// earliest tried).
func estimateOffset(groups []group, reqs []JoinRequest, bt int64, opt JoinOptions) float64 {
	const k, m = 32, 1000
	if len(groups) == 0 || len(reqs) == 0 {
		return 0
	}
	sample := reqs[:min(len(reqs), m)]
	var cands []float64
	for _, g := range groups[:min(len(groups), k)] {
		for _, r := range reqs[:min(len(reqs), k)] {
			c := g.ts - float64(r.ArrivalNs)/1e9
			if !slices.Contains(cands, c) {
				cands = append(cands, c)
			}
		}
	}
	best, bestM, bestN := cands[0], -1, int64(-1)
	for _, c := range cands {
		var m int
		var n int64
		for _, cl := range assign(groups, sample, c, bt, opt) {
			if len(cl.from) > 0 {
				m++
			}
			for _, x := range cl.from {
				n += int64(x.n)
			}
		}
		if m > bestM || m == bestM && n > bestN {
			best, bestM, bestN = c, m, n
		}
	}
	return best
}
