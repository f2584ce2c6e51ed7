package scenario

import (
	"errors"
	"strings"
	"testing"
)

// KV geometry by hand. The block cache holds what the layers that keep
// every token hold: a block is BytesPerToken x block_tokens.
func TestGoldenKVGeometry(t *testing.T) {
	for _, c := range []struct {
		name, src          string
		perToken, perBlock int64
		local              int64 // local layers' bytes per token
	}{
		// DeepSeek-V3, MLA: one latent of 512 + 64 bf16 elements per layer,
		// (512 + 64) x 2 x 61 = 70,272 B/token (68.6 KiB), x 512 = 35,979,264 B.
		{"deepseek-v3", "preset = \"deepseek-v3\"\n", 70_272, 35_979_264, 0},
		// fp8 KV with the same weights: (512 + 64) x 1 x 61 = 35,136.
		{"deepseek-v3 fp8 kv", "preset = \"deepseek-v3\"\nkv_dtype = \"fp8\"\n", 35_136, 17_989_632, 0},
		// Kimi K2 has DeepSeek-V3's latent: fewer heads do not change it.
		{"kimi-k2", "preset = \"kimi-k2\"\n", 70_272, 35_979_264, 0},
		// gpt-oss-120b: 18 of 36 layers full; 2 x 8 x 64 x 2 = 2,048 B per
		// token and layer: 18 x 2,048 = 36,864 B/token, x 512 = 18,874,368.
		// The 18 sliding layers keep at most 128 tokens of a request.
		{"gpt-oss-120b", "preset = \"gpt-oss-120b\"\n", 36_864, 18_874_368, 36_864},
		// Gemma 3 27B: 62 layers, every 6th global: 10 full, 52 sliding;
		// 2 x 16 x 128 x 2 = 8,192 B per layer: 81,920 B/token in blocks.
		{"gemma-3-27b", "preset = \"gemma-3-27b\"\n", 81_920, 41_943_040, 52 * 8192},
		// Llama 4 Scout: 48 layers, every 4th global: 12 x 4,096 = 49,152.
		{"llama-4-scout", "preset = \"llama-4-scout\"\n", 49_152, 25_165_824, 36 * 4096},
		// fp8 KV, bf16 weights: half the KV, the same weight bytes.
		{"llama fp8 kv", "preset = \"llama-3.1-8b\"\nkv_dtype = \"fp8\"\n", 64 << 10, 32 << 20, 0},
		// An existing model keeps its figures: 2 x 32 x 8 x 128 x 2.
		{"llama-3.1-8b", "preset = \"llama-3.1-8b\"\n", 128 << 10, 64 << 20, 0},
		// Keys alone: 4 layers, 2 full (every 2nd), window 64 chunked.
		{"keys", "layers = 4\nkv_heads = 2\nhead_dim = 64\nwindow = 64\nwindow_kind = \"chunked\"\nfull_every = 2\nblock_tokens = 16\n", 2 * 512, 2 * 512 * 16, 2 * 512},
	} {
		s := parseOK(t, doc("[model]\n"+c.src))
		m := s.Model
		if m.BytesPerToken() != c.perToken || m.BytesPerBlock() != c.perBlock || m.LocalBytesPerToken() != c.local {
			t.Errorf("%s: %d B/token, %d B/block, %d local B/token; want %d, %d, %d", c.name,
				m.BytesPerToken(), m.BytesPerBlock(), m.LocalBytesPerToken(), c.perToken, c.perBlock, c.local)
		}
		if r, err := m.Size(0, nil, nil); err != nil || r.BytesPerToken != c.perToken || r.BytesPerBlock != c.perBlock {
			t.Errorf("%s: Size %+v, %v", c.name, r, err)
		}
	}
	s := parseOK(t, doc("[model]\npreset = \"llama-3.1-8b\"\nkv_dtype = \"fp8\"\n"))
	if s.Model.WeightBytes() != 2*8_030_261_248 {
		t.Errorf("fp8 KV changed the weights: %g", s.Model.WeightBytes())
	}
}

// Active parameters: 2 FLOPs per active parameter per token.
func TestActiveParams(t *testing.T) {
	for name, want := range map[string]float64{
		"qwen3-30b-a3b":   3_353_032_704,  // 30,532,122,624 - 48 x 120 x 4,718,592
		"qwen3-235b-a22b": 22_190_763_520, // 235,093,634,560 - 94 x 120 x 18,874,368
		"deepseek-v3":     37_552_297_472, // 671,026,419,200 - 58 x 248 x 44,040,192
		"kimi-k2":         32_861_500_928, // 1,026,408,232,448 - 60 x 376 x 44,040,192
		"llama-3.1-8b":    8_030_261_248,
	} {
		m, _ := PresetModel(name)
		if got := m.ActiveParams(); got != want {
			t.Errorf("%s: %.0f active parameters, want %.0f", name, got, want)
		}
	}
}

// Geometry and parallelism keys that do not fit together: one line each,
// naming the key.
func TestGeometryErrors(t *testing.T) {
	const moe = "[model]\npreset = \"qwen3-30b-a3b\"\n" // lines 1-2
	const m8b = "[model]\npreset = \"llama-3.1-8b\"\n"
	for _, c := range []struct{ name, src, want string }{
		{"rope without MLA", doc("[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 8\nqk_rope_head_dim = 64\n"),
			"scenarios/x.toml:5: model: qk_rope_head_dim: only with kv_lora_rank (MLA)"},
		{"every layer local", doc("[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 8\nwindow = 4096\n"),
			"scenarios/x.toml:5: model: window: every layer is local: kvsim's block cache holds the layers that keep every token; set full_every (1..layers)"},
		{"full_every past layers", doc("[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 8\nwindow = 16\nfull_every = 3\n"),
			"scenarios/x.toml:6: model: full_every: every 3-th layer keeps full attention, but there are 2 layers"},
		{"full_every without window", doc(m8b + "full_every = 2\n"), "scenarios/x.toml:3: model: full_every: only with window > 0"},
		{"window kind", doc(m8b + "window = 8\nfull_every = 2\nwindow_kind = \"tiled\"\n"),
			`scenarios/x.toml:5: model: window_kind: unknown window_kind "tiled" (known: sliding, chunked)`},
		{"experts_per_token without experts", doc(m8b + "experts_per_token = 2\n"), "scenarios/x.toml:3: model: experts_per_token: only with experts > 0"},
		{"more per token than experts", doc(moe + "experts_per_token = 200\n"), "scenarios/x.toml:3: model: experts_per_token: 200 experts per token of 128 experts"},
		{"experts without hidden", doc("[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 8\nparams = 1e9\nexperts = 4\nexperts_per_token = 1\nexpert_ffn = 64\n"),
			"scenarios/x.toml:1: model: hidden: required with experts (an expert is 3 x hidden x expert_ffn parameters)"},
		{"experts past params", doc(moe + "params = 1e9\n"),
			"scenarios/x.toml:3: model: params: 1e+09 parameters cannot hold 48 x 128 routed and 0 shared experts of 4718592 parameters"},
		{"all layers dense", doc(moe + "dense_layers = 48\n"), "scenarios/x.toml:3: model: dense_layers: 48 dense layers of 48 leave no layer with experts"},
		{"dp of a dense model", doc(m8b + "[gpu]\npreset = \"h100\"\ndp = 2\n"),
			"scenarios/x.toml:5: gpu: dp: only for a model with experts (data-parallel replicas of a dense model are [cluster] instances)"},
		{"ep not the instance", doc(moe + "[gpu]\npreset = \"h100\"\ntp = 4\nep = 2\n"),
			"scenarios/x.toml:6: gpu: ep: 2 must be 1 or tp x dp = 4 (vLLM spreads experts over all of an instance's GPUs)"},
		{"dp without ep", doc(moe + "[gpu]\npreset = \"h100\"\ndp = 2\n"),
			"scenarios/x.toml:5: gpu: dp: dp = 2 needs ep = tp x dp = 2: the dp groups share experts spread over all their GPUs"},
		{"interconnect name", doc(m8b + "[gpu]\ninterconnect = \"infiniband\"\n"),
			`scenarios/x.toml:4: gpu: interconnect: unknown interconnect "infiniband" (known: none, nvlink3, nvlink4, nvlink5, pcie4, pcie5, xgmi)`},
		{"interconnect bandwidth past time", doc(m8b + "[gpu]\npreset = \"h100\"\ntp = 2\ninterconnect_bandwidth = 1\n"),
			// 32 layers x 4 collectives x 2 x 8192 x 4096 x 2 B at 1 B/s = 1.7e19 ns
			"scenarios/x.toml:6: gpu: interconnect_bandwidth: a step of 8192 tokens may spend 544 years in collectives, past the simulated-time limit of 146 years (2^62 ns)"},
		{"interconnect without hidden", doc("[model]\nlayers = 2\nkv_heads = 1\nhead_dim = 8\n[gpu]\ntp = 2\ninterconnect = \"nvlink4\"\n"),
			"scenarios/x.toml:1: model: hidden: required with an interconnect: collectives move hidden-size activations"},
		{"kv_dtype", doc(m8b + "kv_dtype = \"fp4\"\n"), `scenarios/x.toml:3: model: kv_dtype: unknown kv_dtype "fp4" (known: fp32, bf16, fp16, fp8, int8)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), path)
			if err == nil {
				t.Fatalf("no error; want %s\nsource:\n%s", c.want, c.src)
			}
			if err.Error() != c.want {
				t.Errorf("error\n got: %s\nwant: %s\nsource:\n%s", err, c.want, c.src)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("error is %T, not *Error", err)
			}
		})
	}
}

// Each tp GPU keeps MLA's whole latent, and a KV head is kept by
// tp / kv_heads GPUs when there are fewer heads than GPUs: the hbm tier's
// default capacity is the free memory divided among the copies.
func TestKVReplicas(t *testing.T) {
	// deepseek-v3 (fp8 weights, 671,026,419,200 B) on 8 x H200:
	// 0.9 x 141 GiB x 8 = 1,090,062,699,724.8 B, minus the weights =
	// 419,036,280,524.8, over 8 copies = 52,379,535,065 B: 1,455 blocks of
	// 35,979,264 B.
	s := parseOK(t, doc("[model]\npreset = \"deepseek-v3\"\n[gpu]\npreset = \"h200\"\ntp = 8\nep = 8\n[[tier]]\nkind = \"hbm\"\n"))
	if r, c := s.GPU.KVReplicas(s.Model), s.Tiers[0].Capacity; r != 8 || c != 52_379_535_065 || c/s.Model.BytesPerBlock() != 1455 {
		t.Errorf("deepseek-v3 on 8 x h200: %d copies, hbm %d B", r, c)
	}
	// qwen3-235b-a22b has 4 KV heads: on 8 GPUs each is kept twice.
	s = parseOK(t, doc("[model]\npreset = \"qwen3-235b-a22b\"\n[gpu]\npreset = \"h200\"\ntp = 8\n"))
	if r := s.GPU.KVReplicas(s.Model); r != 2 {
		t.Errorf("qwen3-235b-a22b on 8 GPUs: %d copies, want 2", r)
	}
	// Llama-3.1-8B's 8 heads on 4 GPUs: one copy, the figures of old.
	s = parseOK(t, doc("[model]\npreset = \"llama-3.1-8b\"\n[gpu]\npreset = \"h100\"\ntp = 4\n"))
	if r := s.GPU.KVReplicas(s.Model); r != 1 {
		t.Errorf("llama-3.1-8b on 4 GPUs: %d copies, want 1", r)
	}
}

// gpt-oss-120b's experts are MXFP4 (4.25 bits): 2,167,371,072 dense
// parameters in bf16 (4,334,742,144 B) and 36 x 128 x 24,883,200 =
// 114,661,785,600 expert parameters at 0.53125 B (60,914,073,600 B) make
// 65,248,815,744 B, so it fits one H100: 0.9 x 80 GiB = 77,309,411,328 B
// leaves 12,060,595,584 B of KV.
func TestExpertDType(t *testing.T) {
	s := parseOK(t, doc("[model]\npreset = \"gpt-oss-120b\"\n[gpu]\npreset = \"h100\"\n[[tier]]\nkind = \"hbm\"\n"))
	if w, c := s.Model.WeightBytes(), s.Tiers[0].Capacity; w != 65_248_815_744 || c != 12_060_595_584 {
		t.Errorf("gpt-oss-120b: %.0f B of weights, hbm %d B", w, c)
	}
	if d := s.Describe(); !strings.Contains(d, "experts in mxfp4") {
		t.Errorf("Describe lacks the experts' dtype:\n%s", d)
	}
	if _, err := Parse([]byte(doc("[model]\npreset = \"llama-3.1-8b\"\nexpert_dtype = \"mxfp4\"\n")), path); err == nil ||
		err.Error() != "scenarios/x.toml:3: model: expert_dtype: only with experts > 0" {
		t.Errorf("expert_dtype of a dense model: %v", err)
	}
}
