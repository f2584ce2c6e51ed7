package scenario

import "math"

// Model is the served model: its KV geometry and, for the roofline step
// model, its size. The fields after BlockTokens are zero for a plain
// dense model with full attention on every layer, and then stay out of
// the JSON the run_id hashes, so scenarios written before them keep
// theirs.
type Model struct {
	Preset      string  `key:"preset"` // "" for none
	Layers      int     `key:"layers"`
	KVHeads     int     `key:"kv_heads"`
	HeadDim     int     `key:"head_dim"`
	Heads       int     `key:"heads"`  // query heads; 0 when neither given nor preset
	Params      float64 `key:"params"` // all parameters, routed experts included; 0 when neither given nor preset
	DType       string  `key:"dtype"`
	BlockTokens int     `key:"block_tokens"`

	Hidden  int    `key:"hidden" json:",omitempty"`   // hidden size: one token's activation vector; 0 when unknown
	KVDType string `key:"kv_dtype" json:",omitempty"` // "" for DType

	// MLA (DeepSeek-V2/V3): one latent of KVLoraRank + QKRopeDim elements
	// per token and layer instead of K and V per KV head.
	KVLoraRank int `key:"kv_lora_rank" json:",omitempty"`
	QKRopeDim  int `key:"qk_rope_head_dim" json:",omitempty"`

	// Local attention: with Window > 0, every FullEvery-th layer attends
	// to the whole context and the others to at most Window tokens
	// (sliding) or to their Window-token chunk (chunked).
	Window     int    `key:"window" json:",omitempty"`
	WindowKind string `key:"window_kind" json:",omitempty"` // "" for "sliding"
	FullEvery  int    `key:"full_every" json:",omitempty"`

	// Mixture of experts: the last Layers - DenseLayers layers route each
	// token to ExpertsPerToken of Experts experts of ExpertFFN
	// intermediate size; SharedExperts of that size see every token.
	Experts         int    `key:"experts" json:",omitempty"`
	ExpertsPerToken int    `key:"experts_per_token" json:",omitempty"`
	ExpertFFN       int    `key:"expert_ffn" json:",omitempty"`
	SharedExperts   int    `key:"shared_experts" json:",omitempty"`
	DenseLayers     int    `key:"dense_layers" json:",omitempty"`
	ExpertDType     string `key:"expert_dtype" json:",omitempty"` // "" for DType
}

var dtypeBytes = map[string]int{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

// DTypes lists the accepted element types.
func DTypes() []string { return []string{"fp32", "bf16", "fp16", "fp8", "int8"} }

// DTypeBytes is the size of one weight, 0 for an unknown dtype.
func (m Model) DTypeBytes() int { return dtypeBytes[m.DType] }

// KVDTypeBytes is the size of one KV cache element.
func (m Model) KVDTypeBytes() int {
	if m.KVDType == "" {
		return m.DTypeBytes()
	}
	return dtypeBytes[m.KVDType]
}

// KVType names the KV cache's element type.
func (m Model) KVType() string {
	if m.KVDType == "" {
		return m.DType
	}
	return m.KVDType
}

// ActBytes is the size of one activation element, what collectives move:
// weights of 8 bits still compute in 16.
func (m Model) ActBytes() int { return max(2, m.DTypeBytes()) }

// LayerBytesPerToken is one token's KV in one layer: K and V of every KV
// head, or, with MLA, the one latent vector.
func (m Model) LayerBytesPerToken() int64 {
	if m.KVLoraRank > 0 {
		return int64(m.KVLoraRank+m.QKRopeDim) * int64(m.KVDTypeBytes())
	}
	return 2 * int64(m.KVHeads) * int64(m.HeadDim) * int64(m.KVDTypeBytes())
}

// FullLayers are the layers that keep every token's KV: all of them
// unless some attend locally.
func (m Model) FullLayers() int {
	switch {
	case m.Window == 0:
		return m.Layers
	case m.FullEvery == 0:
		return 0
	}
	return m.Layers / m.FullEvery
}

// LocalLayers attend to at most Window tokens.
func (m Model) LocalLayers() int { return m.Layers - m.FullLayers() }

// LocalKind is "sliding" or "chunked".
func (m Model) LocalKind() string {
	if m.WindowKind == "" {
		return "sliding"
	}
	return m.WindowKind
}

// BytesPerToken is what a cached token takes: its KV in the layers that
// keep every token (a dense full-attention model: 2 x layers x kv_heads x
// head_dim x element size). Local layers keep at most a window per
// request and are not in the block cache (LocalBytesPerToken).
func (m Model) BytesPerToken() int64 { return int64(m.FullLayers()) * m.LayerBytesPerToken() }

// LocalBytesPerToken is one token's KV in the local layers.
func (m Model) LocalBytesPerToken() int64 { return int64(m.LocalLayers()) * m.LayerBytesPerToken() }

// BytesPerBlock is BytesPerToken x BlockTokens.
func (m Model) BytesPerBlock() int64 { return m.BytesPerToken() * int64(m.BlockTokens) }

// WeightBytes is Params x element size: the weights the GPUs hold (a
// dense model's step reads them all); routed experts count at
// ExpertDTypeBytes.
func (m Model) WeightBytes() float64 {
	if m.ExpertDType == "" || m.Experts == 0 {
		return m.Params * float64(m.DTypeBytes())
	}
	return m.DenseParams()*float64(m.DTypeBytes()) + m.RoutedParams()*m.ExpertDTypeBytes()
}

// expertDTypeBytes are the bytes of one routed-expert weight by
// expert_dtype: MXFP4 packs 32 4-bit values with one 8-bit scale.
var expertDTypeBytes = map[string]float64{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "mxfp4": 4.25 / 8}

// ExpertDTypes lists the accepted element types of routed experts.
func ExpertDTypes() []string { return append(DTypes(), "mxfp4") }

// ExpertDTypeBytes is the size of one routed-expert weight.
func (m Model) ExpertDTypeBytes() float64 {
	if m.ExpertDType == "" {
		return float64(m.DTypeBytes())
	}
	return expertDTypeBytes[m.ExpertDType]
}

// MoELayers are the layers with routed experts.
func (m Model) MoELayers() int {
	if m.Experts == 0 {
		return 0
	}
	return m.Layers - m.DenseLayers
}

// ExpertParams is one expert of one layer: gate, up and down projections
// (biases, where a model has them, are left in the dense part).
func (m Model) ExpertParams() float64 { return 3 * float64(m.Hidden) * float64(m.ExpertFFN) }

// RoutedParams are all routed experts of all MoE layers.
func (m Model) RoutedParams() float64 {
	return float64(m.MoELayers()) * float64(m.Experts) * m.ExpertParams()
}

// DenseParams are the parameters every token uses: Params less the
// routed experts (attention, embeddings, dense layers, shared experts).
func (m Model) DenseParams() float64 { return m.Params - m.RoutedParams() }

// ActiveParams are the parameters one token computes with: the dense
// part and ExpertsPerToken routed experts per MoE layer.
func (m Model) ActiveParams() float64 {
	if m.Experts == 0 {
		return m.Params
	}
	return m.DenseParams() + float64(m.MoELayers())*float64(m.ExpertsPerToken)*m.ExpertParams()
}

// ResidentWeightBytes are the weights held by the dp attention replicas:
// each holds the dense part, the routed experts are spread once.
func (m Model) ResidentWeightBytes(dp int) float64 {
	if dp <= 1 {
		return m.WeightBytes()
	}
	return m.DenseParams()*float64(dp)*float64(m.DTypeBytes()) + m.RoutedParams()*m.ExpertDTypeBytes()
}

// maxDim bounds model dimensions so that byte counts cannot overflow.
const maxDim = 1 << 24

// WindowKinds lists the values of [model] window_kind.
func WindowKinds() []string { return []string{"sliding", "chunked"} }

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
	// errKey names the key a problem comes from: the first of keys given,
	// else the first (a preset's value).
	errKey := func(keys ...string) string {
		for _, k := range keys {
			if _, ok := t.m[k]; ok {
				return k
			}
		}
		return keys[0]
	}
	if m.Heads > 0 && m.Heads%m.KVHeads != 0 {
		key := "heads"
		if _, ok := t.m[key]; !ok {
			key = "kv_heads"
		}
		return m, t.errf(key, "%d query heads are not a multiple of %d kv_heads", m.Heads, m.KVHeads)
	}
	if err := m.checkGeometry(t, errKey); err != nil {
		return m, err
	}
	if m.WeightBytes() >= float64(math.MaxInt64)/4 {
		return m, t.errf("params", "%g parameters of %s is past what kvsim can count in bytes", m.Params, m.DType)
	}
	if _, ok := MulChecked(m.LayerBytesPerToken(), int64(m.Layers), int64(m.BlockTokens)); !ok {
		return m, t.errf("", "KV bytes per block overflow int64")
	}
	if _, ok := MulChecked(2, int64(m.DTypeBytes()), int64(m.Layers), int64(m.KVHeads), int64(m.HeadDim), int64(m.BlockTokens)); !ok {
		return m, t.errf("", "KV bytes per block overflow int64")
	}
	if _, ok := MulChecked(m.LayerBytesPerToken(), int64(m.Layers), int64(m.Window)); !ok {
		return m, t.errf("window", "a window's KV overflows int64")
	}
	return m, nil
}

// checkGeometry checks the keys of MLA, local attention and experts
// against each other.
func (m Model) checkGeometry(t *table, errKey func(...string) string) error {
	if m.QKRopeDim > 0 && m.KVLoraRank == 0 {
		return t.errf("qk_rope_head_dim", "only with kv_lora_rank (MLA)")
	}
	if m.Window == 0 {
		for _, k := range []string{"window_kind", "full_every"} {
			if _, ok := t.m[k]; ok {
				return t.errf(k, "only with window > 0")
			}
		}
	} else {
		switch {
		case m.FullEvery == 0:
			return t.errf(errKey("full_every", "window"), "every layer is local: kvsim's block cache holds the layers that keep every token; set full_every (1..layers)")
		case m.FullEvery > m.Layers:
			return t.errf(errKey("full_every", "layers"), "every %d-th layer keeps full attention, but there are %d layers", m.FullEvery, m.Layers)
		}
	}
	if m.Experts == 0 {
		for _, k := range []string{"experts_per_token", "expert_ffn", "shared_experts", "dense_layers", "expert_dtype"} {
			if _, ok := t.m[k]; ok {
				return t.errf(k, "only with experts > 0")
			}
		}
		return nil
	}
	switch {
	case m.ExpertsPerToken == 0:
		return t.errf("experts_per_token", "required with experts")
	case m.ExpertsPerToken > m.Experts:
		return t.errf(errKey("experts_per_token", "experts"), "%d experts per token of %d experts", m.ExpertsPerToken, m.Experts)
	case m.ExpertFFN == 0:
		return t.errf("expert_ffn", "required with experts")
	case m.Hidden == 0:
		return t.errf("hidden", "required with experts (an expert is 3 x hidden x expert_ffn parameters)")
	case m.DenseLayers >= m.Layers:
		return t.errf(errKey("dense_layers", "layers"), "%d dense layers of %d leave no layer with experts", m.DenseLayers, m.Layers)
	case m.Params == 0:
		return t.errf("params", "required with experts (all parameters, experts included)")
	}
	shared := float64(m.MoELayers()) * float64(m.SharedExperts) * m.ExpertParams()
	if !(m.RoutedParams()+shared < m.Params) {
		return t.errf(errKey("params", "experts", "expert_ffn", "hidden"), "%g parameters cannot hold %d x %d routed and %d shared experts of %.0f parameters",
			m.Params, m.MoELayers(), m.Experts, m.SharedExperts, m.ExpertParams())
	}
	return nil
}
