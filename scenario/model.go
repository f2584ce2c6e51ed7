package scenario

import "math"

// Model is the served model: its KV geometry and, for the roofline step
// model, its size.
type Model struct {
	Preset      string  `key:"preset"` // "" for none
	Layers      int     `key:"layers"`
	KVHeads     int     `key:"kv_heads"`
	HeadDim     int     `key:"head_dim"`
	Heads       int     `key:"heads"`  // query heads; 0 when neither given nor preset
	Params      float64 `key:"params"` // 0 when neither given nor preset
	DType       string  `key:"dtype"`
	BlockTokens int     `key:"block_tokens"`
}

var dtypeBytes = map[string]int{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

// DTypes lists the accepted element types.
func DTypes() []string { return []string{"fp32", "bf16", "fp16", "fp8", "int8"} }

// DTypeBytes is the size of one element, 0 for an unknown dtype.
func (m Model) DTypeBytes() int { return dtypeBytes[m.DType] }

// BytesPerToken is 2 (K and V) x layers x kv_heads x head_dim x element size.
func (m Model) BytesPerToken() int64 {
	return 2 * int64(m.Layers) * int64(m.KVHeads) * int64(m.HeadDim) * int64(m.DTypeBytes())
}

// BytesPerBlock is BytesPerToken x BlockTokens.
func (m Model) BytesPerBlock() int64 { return m.BytesPerToken() * int64(m.BlockTokens) }

// WeightBytes is Params x element size: the weights a step reads.
func (m Model) WeightBytes() float64 { return m.Params * float64(m.DTypeBytes()) }

// maxDim bounds model dimensions so that byte counts cannot overflow.
const maxDim = 1 << 24

func parseModel(t *table) (Model, error) {
	var m Model
	err := t.bind(&m, func(key string) (any, error) {
		pre, ok := modelPresets[m.Preset]
		if !ok && (key == "layers" || key == "kv_heads" || key == "head_dim") {
			return nil, t.errf(key, "required (or a preset)")
		}
		return presetDefault(&pre, key), nil
	})
	if err != nil {
		return m, err
	}
	if m.Heads > 0 && m.Heads%m.KVHeads != 0 {
		key := "heads"
		if _, ok := t.m[key]; !ok {
			key = "kv_heads"
		}
		return m, t.errf(key, "%d query heads are not a multiple of %d kv_heads", m.Heads, m.KVHeads)
	}
	if m.WeightBytes() >= float64(math.MaxInt64)/4 {
		return m, t.errf("params", "%g parameters of %s is past what kvsim can count in bytes", m.Params, m.DType)
	}
	if _, ok := MulChecked(2, int64(m.DTypeBytes()), int64(m.Layers), int64(m.KVHeads), int64(m.HeadDim), int64(m.BlockTokens)); !ok {
		return m, t.errf("", "KV bytes per block overflow int64")
	}
	return m, nil
}
