package scenario

import (
	"errors"
	"math"
)

// SizeReport is what a model's KV takes and what fits in an HBM budget
// (kvsim size prints it; --json writes it as is). Request figures need a
// token count and fit figures a budget, so both are optional.
type SizeReport struct {
	Layers        int    `json:"layers"`
	KVHeads       int    `json:"kv_heads"`
	HeadDim       int    `json:"head_dim"`
	DType         string `json:"dtype"`
	DTypeBytes    int    `json:"dtype_bytes"`
	BlockTokens   int    `json:"block_tokens"`
	BytesPerToken int64  `json:"bytes_per_token"`
	BytesPerBlock int64  `json:"bytes_per_block"`

	// The geometry beyond K and V of every layer, present where a model
	// has it: MLA's latent, local-attention layers (their KV is per
	// request, bounded by the window, and outside the block cache), and
	// experts.
	KVLoraRank         int     `json:"kv_lora_rank,omitempty"`
	QKRopeDim          int     `json:"qk_rope_head_dim,omitempty"`
	LayerBytesPerToken int64   `json:"layer_bytes_per_token,omitempty"`
	FullLayers         int     `json:"full_layers,omitempty"`
	LocalLayers        int     `json:"local_layers,omitempty"`
	LocalKind          string  `json:"local_kind,omitempty"`
	Window             int     `json:"window,omitempty"`
	LocalBytesPerToken int64   `json:"local_bytes_per_token,omitempty"`
	LocalBytesMax      int64   `json:"local_bytes_per_request_max,omitempty"` // a window's worth
	LocalBytesRequest  *int64  `json:"local_bytes_per_request,omitempty"`     // with tokens
	Params             float64 `json:"params,omitempty"`
	ActiveParams       float64 `json:"active_params,omitempty"`
	Experts            int     `json:"experts,omitempty"`
	ExpertsPerToken    int     `json:"experts_per_token,omitempty"`
	MoELayers          int     `json:"moe_layers,omitempty"`

	Tokens           int64  `json:"tokens,omitempty"`
	BlocksPerRequest *int64 `json:"blocks_per_request,omitempty"`
	BytesPerRequest  *int64 `json:"bytes_per_request,omitempty"`
	// A request occupies whole blocks; this is what it takes in a cache.
	BlockBytesPerRequest *int64 `json:"block_bytes_per_request,omitempty"`

	HBMBytes    *int64 `json:"hbm_bytes,omitempty"`
	TokensFit   *int64 `json:"tokens_fit,omitempty"`
	BlocksFit   *int64 `json:"blocks_fit,omitempty"`
	RequestsFit *int64 `json:"requests_fit,omitempty"`

	// With --scenario: what every tier holds, in whole blocks.
	Tiers []SizeTier `json:"tiers,omitempty"`
}

// SizeTier is what one tier holds, in whole blocks.
type SizeTier struct {
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	CapacityBytes int64  `json:"capacity_bytes"`
	Blocks        int64  `json:"blocks"`
}

// Size is what m takes for a request of tokens tokens (0: no request
// figures) and what fits in an HBM budget (nil: no fit figures); tiers,
// if given, get their capacity in whole blocks, the first (hbm) taking
// the budget's. m's dimensions must be > 0 and its dtype known.
func (m Model) Size(tokens int64, hbmBudget *int64, tiers []Tier) (*SizeReport, error) {
	r := &SizeReport{
		Layers: m.Layers, KVHeads: m.KVHeads, HeadDim: m.HeadDim, DType: m.KVType(),
		DTypeBytes: m.KVDTypeBytes(), BlockTokens: m.BlockTokens, Tokens: tokens,
	}
	layer, ok := MulChecked(2, int64(m.KVDTypeBytes()), int64(m.KVHeads), int64(m.HeadDim))
	if m.KVLoraRank > 0 {
		layer, ok = MulChecked(int64(m.KVDTypeBytes()), int64(m.KVLoraRank)+int64(m.QKRopeDim))
	}
	if !ok {
		return nil, errors.New("bytes per token overflow int64")
	}
	if r.BytesPerToken, ok = MulChecked(layer, int64(m.FullLayers())); !ok {
		return nil, errors.New("bytes per token overflow int64")
	}
	if m.KVLoraRank > 0 || m.LocalLayers() > 0 {
		r.KVLoraRank, r.QKRopeDim, r.LayerBytesPerToken, r.FullLayers = m.KVLoraRank, m.QKRopeDim, layer, m.FullLayers()
	}
	if m.LocalLayers() > 0 {
		r.LocalLayers, r.LocalKind, r.Window = m.LocalLayers(), m.LocalKind(), m.Window
		if r.LocalBytesPerToken, ok = MulChecked(layer, int64(m.LocalLayers())); !ok {
			return nil, errors.New("local bytes per token overflow int64")
		}
		if r.LocalBytesMax, ok = MulChecked(r.LocalBytesPerToken, int64(m.Window)); !ok {
			return nil, errors.New("local bytes per request overflow int64")
		}
		if tokens > 0 {
			b := r.LocalBytesPerToken * min(tokens, int64(m.Window))
			r.LocalBytesRequest = &b
		}
	}
	if m.Experts > 0 {
		r.Params, r.ActiveParams, r.Experts, r.ExpertsPerToken, r.MoELayers = m.Params, m.ActiveParams(), m.Experts, m.ExpertsPerToken, m.MoELayers()
	}
	if r.BytesPerBlock, ok = MulChecked(r.BytesPerToken, int64(m.BlockTokens)); !ok {
		return nil, errors.New("bytes per block overflow int64")
	}
	if tokens > 0 {
		blocks := (tokens + int64(m.BlockTokens) - 1) / int64(m.BlockTokens)
		exact, ok1 := MulChecked(tokens, r.BytesPerToken)
		whole, ok2 := MulChecked(blocks, r.BytesPerBlock)
		if !ok1 || !ok2 {
			return nil, errors.New("bytes per request overflow int64")
		}
		r.BlocksPerRequest, r.BytesPerRequest, r.BlockBytesPerRequest = &blocks, &exact, &whole
	}
	if r.BytesPerToken <= 0 {
		return nil, errors.New("no layer keeps every token: a model needs a full-attention layer")
	}
	if hbmBudget != nil {
		budget := *hbmBudget
		tf, bf := budget/r.BytesPerToken, budget/r.BytesPerBlock
		r.HBMBytes, r.TokensFit, r.BlocksFit = &budget, &tf, &bf
		if r.BlockBytesPerRequest != nil {
			per := *r.BlockBytesPerRequest
			if l := r.LocalBytesRequest; l != nil && per <= math.MaxInt64-*l { // a running request's window too
				per += *l
			}
			rf := budget / per
			r.RequestsFit = &rf
		}
	}
	for i, t := range tiers {
		c := t.Capacity
		if i == 0 && hbmBudget != nil {
			c = *hbmBudget // the budget, if given, stands for the hbm tier
		}
		r.Tiers = append(r.Tiers, SizeTier{Name: t.Name, Kind: t.Kind, CapacityBytes: c, Blocks: c / r.BytesPerBlock})
	}
	return r, nil
}
