package scenario

import (
	"cmp"
	"sort"
)

// GPUPreset is one GPU's figures from its vendor's data sheet.
type GPUPreset struct {
	PeakTFLOPs   float64 `key:"peak_tflops"`   // dense bf16 tensor-core TFLOP/s (the sheets quote twice this "with sparsity")
	HBMBandwidth float64 `key:"hbm_bandwidth"` // bytes/s
	HBMCapacity  int64   `key:"hbm_capacity"`  // bytes
}

// gpuPresets: vendors' data sheets. Memory sizes are quoted in GB but are
// binary (HBM stacks of 16 or 24 GiB; nvidia-smi reports A100 80GB as
// 81920 MiB), so they are taken as GiB; bandwidths are decimal. Peak is
// dense bf16 with fp32 accumulation, the rate inference kernels run at.
// The interconnect a preset usually comes with is named, not implied:
// [gpu] interconnect stays "none" unless given.
//   - h100, h100-sxm: H100 SXM5 data sheet: BF16 1,979 TFLOPS with sparsity, 3.35 TB/s, 80 GB HBM3 (NVLink 4, 900 GB/s).
//   - h100-pcie: H100 PCIe data sheet: BF16 1,513 TFLOPS with sparsity, 2 TB/s, 80 GB HBM2e (PCIe Gen5, or an NVLink bridge).
//   - h200: H200 SXM data sheet: BF16 1,979 TFLOPS with sparsity, 4.8 TB/s, 141 GB HBM3e (NVLink 4).
//   - h20: H20 product brief: BF16 148 TFLOPS dense, 4.0 TB/s, 96 GB HBM3 (NVLink 900 GB/s).
//   - a100: A100 80GB SXM data sheet: BF16 312 TFLOPS dense, 2,039 GB/s, 80 GB HBM2e (NVLink 3, 600 GB/s).
//   - l40s: L40S data sheet: BF16 362.05 TFLOPS dense (733 with sparsity), 864 GB/s, 48 GB GDDR6 (PCIe Gen4 only).
//   - b200: DGX B200 data sheet, per GPU of eight: 72 PFLOPS FP8 training with
//     sparsity (FP8 4.5 PF dense, BF16 2.25 PF dense), 64 TB/s (8 TB/s), 1,440 GB (180 GB) HBM3e (NVLink 5, 1.8 TB/s).
//   - rtx-4090: Ada Lovelace architecture whitepaper, GeForce RTX 4090: peak BF16 tensor
//     TFLOPS with FP32 accumulate 165.2 (330.4 with sparsity), 1,008 GB/s, 24 GB GDDR6X (PCIe Gen4, no NVLink).
//   - rtx-pro-6000: RTX PRO 6000 Blackwell data sheet: 96 GB GDDR7, 1,792 GB/s; 503.8 TFLOPS
//     dense BF16 with FP32 accumulate (PCIe Gen5, no NVLink).
//   - mi300x: AMD Instinct MI300X data sheet: BF16 1,307.4 TFLOPS dense (2,614.9 with sparsity),
//     5.3 TB/s, 192 GB HBM3 (Infinity Fabric, 7 links x 128 GB/s).
var gpuPresets = map[string]GPUPreset{
	"h100":         {PeakTFLOPs: 989, HBMBandwidth: 3.35e12, HBMCapacity: 80 << 30},
	"h100-sxm":     {PeakTFLOPs: 989, HBMBandwidth: 3.35e12, HBMCapacity: 80 << 30},
	"h100-pcie":    {PeakTFLOPs: 756, HBMBandwidth: 2e12, HBMCapacity: 80 << 30},
	"h200":         {PeakTFLOPs: 989, HBMBandwidth: 4.8e12, HBMCapacity: 141 << 30},
	"h20":          {PeakTFLOPs: 148, HBMBandwidth: 4e12, HBMCapacity: 96 << 30},
	"a100":         {PeakTFLOPs: 312, HBMBandwidth: 2.039e12, HBMCapacity: 80 << 30},
	"l40s":         {PeakTFLOPs: 362, HBMBandwidth: 0.864e12, HBMCapacity: 48 << 30},
	"b200":         {PeakTFLOPs: 2250, HBMBandwidth: 8e12, HBMCapacity: 180 << 30},
	"rtx-4090":     {PeakTFLOPs: 165.2, HBMBandwidth: 1.008e12, HBMCapacity: 24 << 30},
	"rtx-pro-6000": {PeakTFLOPs: 503.8, HBMBandwidth: 1.792e12, HBMCapacity: 96 << 30},
	"mi300x":       {PeakTFLOPs: 1307.4, HBMBandwidth: 5.3e12, HBMCapacity: 192 << 30},
}

// InterconnectPreset is a GPU-to-GPU link: what one GPU sends each way
// and the latency of one step of a collective.
type InterconnectPreset struct {
	Bandwidth float64 `key:"interconnect_bandwidth"` // bytes/s per GPU, each direction
	Latency   int64   `key:"interconnect_latency"`   // ns per collective step
}

// interconnects: bandwidths are the data sheets' per-GPU totals halved
// (they quote both directions). Latencies are not on data sheets: they
// are estimates of one hop of NCCL's small-message ring (about a
// microsecond over NVLink or Infinity Fabric, a few through a PCIe
// switch or the host); interconnect_latency overrides them.
//   - nvlink3: A100 data sheet, NVLink 600 GB/s.
//   - nvlink4: H100 SXM / H200 / H20 data sheets, NVLink 900 GB/s.
//   - nvlink5: B200 (DGX B200 data sheet), NVLink 1.8 TB/s per GPU.
//   - pcie4: PCIe Gen4 x16, 64 GB/s both ways (L40S, A100 PCIe data sheets).
//   - pcie5: PCIe Gen5 x16, 128 GB/s both ways (H100 PCIe data sheet).
//   - xgmi: MI300X data sheet, 7 Infinity Fabric links of 128 GB/s (896 GB/s) to the other seven GPUs.
var interconnects = map[string]InterconnectPreset{
	"none":    {},
	"nvlink3": {Bandwidth: 300e9, Latency: 1000},
	"nvlink4": {Bandwidth: 450e9, Latency: 1000},
	"nvlink5": {Bandwidth: 900e9, Latency: 1000},
	"pcie4":   {Bandwidth: 32e9, Latency: 3000},
	"pcie5":   {Bandwidth: 64e9, Latency: 3000},
	"xgmi":    {Bandwidth: 448e9, Latency: 1000},
}

// Interconnects lists the [gpu] interconnect names, sorted.
func Interconnects() []string { return sortedKeys(interconnects) }

// ModelPreset is one model's shape from its config.json.
type ModelPreset struct {
	Layers  int     `key:"layers"`   // num_hidden_layers
	Heads   int     `key:"heads"`    // num_attention_heads (query heads)
	KVHeads int     `key:"kv_heads"` // num_key_value_heads
	HeadDim int     `key:"head_dim"` // hidden_size / num_attention_heads (or head_dim)
	Params  float64 `key:"params"`   // parameters, counted from the config's tensor shapes
	Hidden  int     `key:"hidden"`   // hidden_size
	DType   string  `key:"dtype"`    // where the checkpoint ships other than bf16
	KVDType string  `key:"kv_dtype"` // vLLM's "auto" KV cache: the activations' dtype

	KVLoraRank int `key:"kv_lora_rank"`     // MLA
	QKRopeDim  int `key:"qk_rope_head_dim"` // MLA

	Window     int    `key:"window"` // sliding_window or attention_chunk_size
	WindowKind string `key:"window_kind"`
	FullEvery  int    `key:"full_every"`

	Experts         int    `key:"experts"`           // n_routed_experts, num_experts, num_local_experts
	ExpertsPerToken int    `key:"experts_per_token"` // num_experts_per_tok
	ExpertFFN       int    `key:"expert_ffn"`        // moe_intermediate_size (intermediate_size where every MLP is MoE)
	SharedExperts   int    `key:"shared_experts"`    // n_shared_experts
	DenseLayers     int    `key:"dense_layers"`      // first_k_dense_replace
	ExpertDType     string `key:"expert_dtype"`      // quantization_config of the experts
}

// modelPresets: the models' Hugging Face config.json. Params are the
// weight tensors those shapes give (embeddings, and lm_head unless
// tie_word_embeddings, plus attention, MLP or experts and routers, norms,
// and the biases a model has): they match the counts the model cards
// quote. Vision towers are left out.
//   - llama-3.1-8b: 32 layers, 32 heads, 8 kv heads, hidden 4096, MLP 14336, vocab 128256.
//   - llama-3.1-70b, llama-3.3-70b: 80, 64, 8, hidden 8192, MLP 28672, vocab 128256.
//   - llama-3.1-405b: 126, 128, 8, hidden 16384, MLP 53248, vocab 128256.
//   - llama-3.2-3b: 28, 24, 8, head_dim 128, hidden 3072, MLP 8192, tied embeddings.
//   - qwen2.5-7b: 28, 28, 4, hidden 3584, MLP 18944, vocab 152064.
//   - qwen2.5-32b: 64, 40, 8, hidden 5120, MLP 27648, vocab 152064.
//   - qwen2.5-72b: 80, 64, 8, hidden 8192, MLP 29568, vocab 152064.
//   - qwen3-8b: 36, 32, 8, head_dim 128, hidden 4096, MLP 12288, vocab 151936, q/k norms (8.19B).
//   - qwen3-32b: 64, 64, 8, head_dim 128, hidden 5120, MLP 25600, vocab 151936 (32.8B).
//   - qwen3-30b-a3b: 48, 32, 4, head_dim 128, hidden 2048, 128 experts of 768, 8 per token,
//     vocab 151936 (30.5B, 3.35B active).
//   - qwen3-235b-a22b: 94, 64, 4, head_dim 128, hidden 4096, 128 experts of 1536, 8 per token,
//     vocab 151936 (235.1B, 22.2B active).
//   - deepseek-v3: 61 layers, 128 heads, hidden 7168, MLA: q_lora_rank 1536, kv_lora_rank 512,
//     qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; first_k_dense_replace 3
//     (MLP 18432), 256 routed experts of 2048, 8 per token, 1 shared, vocab 129280 (671.0B
//     without the multi-token-prediction layer, 37.6B active). head_dim is the query/key
//     head (nope + rope), which attention FLOPs use; the KV is the latent. The checkpoint
//     ships fp8 weights (quantization_config: fp8, 128 x 128 blocks) and computes in bf16,
//     so dtype is fp8 and the KV cache bf16.
//   - kimi-k2: DeepSeek-V3's shape with 64 heads, 384 routed experts, first_k_dense_replace 1,
//     vocab 163840 (1.026T, 32.9B active); fp8 weights, bf16 KV, as DeepSeek-V3.
//   - gpt-oss-120b: 36 layers, 64 heads, 8 kv heads, head_dim 64, hidden 2880, 128 experts of
//     2880, 4 per token, layer_types alternating sliding (window 128) and full, starting
//     sliding; vocab 201088 (116.8B). quantization_config: its experts ship in MXFP4 (4-bit
//     values, one 8-bit scale per 32), the rest in bf16: 65.2 GB of weights.
//   - gemma-3-27b: text model: 62 layers, 32 heads, 16 kv heads, head_dim 128, hidden 5376,
//     MLP 21504, sliding_window 1024 with every 6th layer global, tied vocab 262208 (27.0B).
//   - mistral-small-24b (Mistral-Small-24B-Instruct-2501): 40, 32, 8, head_dim 128 (not
//     hidden / heads), hidden 5120, MLP 32768, vocab 131072 (23.6B).
//   - llama-4-scout (Llama-4-Scout-17B-16E): 48 layers, 40 heads, 8 kv heads, head_dim 128,
//     hidden 5120, 16 experts of 8192, 1 per token, 1 shared; attention_chunk_size 8192 with
//     every 4th layer global (no RoPE); vocab 202048 (107.8B text, 17.2B active).
var modelPresets = map[string]ModelPreset{
	"llama-3.1-8b":   {Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, Params: 8_030_261_248, Hidden: 4096},
	"llama-3.1-70b":  {Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Params: 70_553_706_496, Hidden: 8192},
	"llama-3.3-70b":  {Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Params: 70_553_706_496, Hidden: 8192},
	"llama-3.1-405b": {Layers: 126, Heads: 128, KVHeads: 8, HeadDim: 128, Params: 405_853_388_800, Hidden: 16384},
	"llama-3.2-3b":   {Layers: 28, Heads: 24, KVHeads: 8, HeadDim: 128, Params: 3_212_749_824, Hidden: 3072},
	"qwen2.5-7b":     {Layers: 28, Heads: 28, KVHeads: 4, HeadDim: 128, Params: 7_615_616_512, Hidden: 3584},
	"qwen2.5-32b":    {Layers: 64, Heads: 40, KVHeads: 8, HeadDim: 128, Params: 32_763_876_352, Hidden: 5120},
	"qwen2.5-72b":    {Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Params: 72_706_203_648, Hidden: 8192},
	"qwen3-8b":       {Layers: 36, Heads: 32, KVHeads: 8, HeadDim: 128, Params: 8_190_735_360, Hidden: 4096},
	"qwen3-32b":      {Layers: 64, Heads: 64, KVHeads: 8, HeadDim: 128, Params: 32_762_123_264, Hidden: 5120},
	"qwen3-30b-a3b": {Layers: 48, Heads: 32, KVHeads: 4, HeadDim: 128, Params: 30_532_122_624, Hidden: 2048,
		Experts: 128, ExpertsPerToken: 8, ExpertFFN: 768},
	"qwen3-235b-a22b": {Layers: 94, Heads: 64, KVHeads: 4, HeadDim: 128, Params: 235_093_634_560, Hidden: 4096,
		Experts: 128, ExpertsPerToken: 8, ExpertFFN: 1536},
	"deepseek-v3": {Layers: 61, Heads: 128, KVHeads: 128, HeadDim: 192, Params: 671_026_419_200, Hidden: 7168, DType: "fp8", KVDType: "bf16",
		KVLoraRank: 512, QKRopeDim: 64, Experts: 256, ExpertsPerToken: 8, ExpertFFN: 2048, SharedExperts: 1, DenseLayers: 3},
	"kimi-k2": {Layers: 61, Heads: 64, KVHeads: 64, HeadDim: 192, Params: 1_026_408_232_448, Hidden: 7168, DType: "fp8", KVDType: "bf16",
		KVLoraRank: 512, QKRopeDim: 64, Experts: 384, ExpertsPerToken: 8, ExpertFFN: 2048, SharedExperts: 1, DenseLayers: 1},
	"gpt-oss-120b": {Layers: 36, Heads: 64, KVHeads: 8, HeadDim: 64, Params: 116_829_156_672, Hidden: 2880,
		Window: 128, WindowKind: "sliding", FullEvery: 2, Experts: 128, ExpertsPerToken: 4, ExpertFFN: 2880, ExpertDType: "mxfp4"},
	"gemma-3-27b": {Layers: 62, Heads: 32, KVHeads: 16, HeadDim: 128, Params: 27_009_346_304, Hidden: 5376,
		Window: 1024, WindowKind: "sliding", FullEvery: 6},
	"mistral-small-24b": {Layers: 40, Heads: 32, KVHeads: 8, HeadDim: 128, Params: 23_572_403_200, Hidden: 5120},
	"llama-4-scout": {Layers: 48, Heads: 40, KVHeads: 8, HeadDim: 128, Params: 107_769_861_120, Hidden: 5120,
		Window: 8192, WindowKind: "chunked", FullEvery: 4, Experts: 16, ExpertsPerToken: 1, ExpertFFN: 8192, SharedExperts: 1},
}

// PresetModel is the [model] a preset alone gives: its geometry, bf16
// unless the preset says otherwise, 512-token blocks.
func PresetModel(name string) (Model, bool) {
	p, ok := modelPresets[name]
	if !ok {
		return Model{}, false
	}
	m := Model{Preset: name, Layers: p.Layers, KVHeads: p.KVHeads, HeadDim: p.HeadDim, Heads: p.Heads, Params: p.Params,
		DType: cmp.Or(p.DType, "bf16"), BlockTokens: 512, Hidden: p.Hidden, KVDType: p.KVDType,
		KVLoraRank: p.KVLoraRank, QKRopeDim: p.QKRopeDim, Window: p.Window, WindowKind: p.WindowKind, FullEvery: p.FullEvery,
		Experts: p.Experts, ExpertsPerToken: p.ExpertsPerToken, ExpertFFN: p.ExpertFFN, SharedExperts: p.SharedExperts, DenseLayers: p.DenseLayers,
		ExpertDType: p.ExpertDType}
	return m, true
}

// GPUPresets lists the [gpu] preset names, sorted.
func GPUPresets() []string { return sortedKeys(gpuPresets) }

// ModelPresets lists the [model] preset names, sorted.
func ModelPresets() []string { return sortedKeys(modelPresets) }

// LookupGPU returns a GPU preset's figures.
func LookupGPU(name string) (GPUPreset, bool) { p, ok := gpuPresets[name]; return p, ok }

// LookupModel returns a model preset's shape.
func LookupModel(name string) (ModelPreset, bool) { p, ok := modelPresets[name]; return p, ok }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
