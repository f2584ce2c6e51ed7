package scenario

import "sort"

// GPUPreset is one GPU's figures from its vendor's data sheet.
type GPUPreset struct {
	PeakTFLOPs   float64 `key:"peak_tflops"`   // dense bf16 tensor-core TFLOP/s (the sheets quote twice this "with sparsity")
	HBMBandwidth float64 `key:"hbm_bandwidth"` // bytes/s
	HBMCapacity  int64   `key:"hbm_capacity"`  // bytes
}

// gpuPresets: NVIDIA data sheets. Memory sizes are quoted in GB but are
// binary (HBM stacks of 16 or 24 GiB; nvidia-smi reports A100 80GB as
// 81920 MiB), so they are taken as GiB; bandwidths are decimal.
//   - h100: H100 SXM5 data sheet: BF16 1,979 TFLOPS with sparsity, 3.35 TB/s, 80 GB HBM3.
//   - h200: H200 SXM data sheet: BF16 1,979 TFLOPS with sparsity, 4.8 TB/s, 141 GB HBM3e.
//   - a100: A100 80GB SXM data sheet: BF16 312 TFLOPS dense, 2,039 GB/s, 80 GB HBM2e.
//   - l40s: L40S data sheet: BF16 362.05 TFLOPS dense (733 with sparsity), 864 GB/s, 48 GB GDDR6.
//   - b200: DGX B200 data sheet, per GPU of eight: 72 PFLOPS FP8 training with
//     sparsity (FP8 4.5 PF dense, BF16 2.25 PF dense), 64 TB/s (8 TB/s), 1,440 GB (180 GB) HBM3e.
var gpuPresets = map[string]GPUPreset{
	"h100": {PeakTFLOPs: 989, HBMBandwidth: 3.35e12, HBMCapacity: 80 << 30},
	"h200": {PeakTFLOPs: 989, HBMBandwidth: 4.8e12, HBMCapacity: 141 << 30},
	"a100": {PeakTFLOPs: 312, HBMBandwidth: 2.039e12, HBMCapacity: 80 << 30},
	"l40s": {PeakTFLOPs: 362, HBMBandwidth: 0.864e12, HBMCapacity: 48 << 30},
	"b200": {PeakTFLOPs: 2250, HBMBandwidth: 8e12, HBMCapacity: 180 << 30},
}

// ModelPreset is one model's shape from its config.json.
type ModelPreset struct {
	Layers  int     `key:"layers"`   // num_hidden_layers
	Heads   int     `key:"heads"`    // num_attention_heads (query heads)
	KVHeads int     `key:"kv_heads"` // num_key_value_heads
	HeadDim int     `key:"head_dim"` // hidden_size / num_attention_heads (or head_dim)
	Params  float64 `key:"params"`   // parameters, counted from the config's tensor shapes
}

// modelPresets: the models' Hugging Face config.json. Params are the
// weight tensors those shapes give (embeddings, and lm_head unless
// tie_word_embeddings, plus attention, MLP, norms and Qwen's QKV biases):
// they match the counts the model cards quote (8.03B, 70.6B, 405B, 3.21B,
// 7.62B, 32.8B, 72.7B).
//   - llama-3.1-8b: 32 layers, 32 heads, 8 kv heads, hidden 4096, MLP 14336, vocab 128256.
//   - llama-3.1-70b: 80, 64, 8, hidden 8192, MLP 28672, vocab 128256.
//   - llama-3.1-405b: 126, 128, 8, hidden 16384, MLP 53248, vocab 128256.
//   - llama-3.2-3b: 28, 24, 8, head_dim 128, hidden 3072, MLP 8192, tied embeddings.
//   - qwen2.5-7b: 28, 28, 4, hidden 3584, MLP 18944, vocab 152064.
//   - qwen2.5-32b: 64, 40, 8, hidden 5120, MLP 27648, vocab 152064.
//   - qwen2.5-72b: 80, 64, 8, hidden 8192, MLP 29568, vocab 152064.
var modelPresets = map[string]ModelPreset{
	"llama-3.1-8b":   {Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, Params: 8_030_261_248},
	"llama-3.1-70b":  {Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Params: 70_553_706_496},
	"llama-3.1-405b": {Layers: 126, Heads: 128, KVHeads: 8, HeadDim: 128, Params: 405_853_388_800},
	"llama-3.2-3b":   {Layers: 28, Heads: 24, KVHeads: 8, HeadDim: 128, Params: 3_212_749_824},
	"qwen2.5-7b":     {Layers: 28, Heads: 28, KVHeads: 4, HeadDim: 128, Params: 7_615_616_512},
	"qwen2.5-32b":    {Layers: 64, Heads: 40, KVHeads: 8, HeadDim: 128, Params: 32_763_876_352},
	"qwen2.5-72b":    {Layers: 80, Heads: 64, KVHeads: 8, HeadDim: 128, Params: 72_706_203_648},
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
