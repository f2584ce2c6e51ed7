package scenario

import "errors"

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
		Layers: m.Layers, KVHeads: m.KVHeads, HeadDim: m.HeadDim, DType: m.DType,
		DTypeBytes: m.DTypeBytes(), BlockTokens: m.BlockTokens, Tokens: tokens,
	}
	var ok bool
	if r.BytesPerToken, ok = MulChecked(2, int64(m.DTypeBytes()), int64(m.Layers), int64(m.KVHeads), int64(m.HeadDim)); !ok {
		return nil, errors.New("bytes per token overflow int64")
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
	if hbmBudget != nil {
		budget := *hbmBudget
		tf, bf := budget/r.BytesPerToken, budget/r.BytesPerBlock
		r.HBMBytes, r.TokensFit, r.BlocksFit = &budget, &tf, &bf
		if r.BlockBytesPerRequest != nil {
			rf := budget / *r.BlockBytesPerRequest
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
