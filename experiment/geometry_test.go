package experiment

import (
	"math"
	"testing"

	"kvsim/sim"
)

// Golden steps of the roofline with parallelism, experts and local
// attention, each worked by hand from the presets' figures. Times are ns;
// "compute" is FLOPs / (peak x GPUs x 0.5), "memory" bytes / (bandwidth x
// GPUs x 0.8), a step max(compute, memory) + 1 ms + collectives.

// geometryScenario is a scenario of model and gpu keys, the rest minimal.
func geometryScenario(model, gpu string) string {
	return "[model]\n" + model + "[gpu]\n" + gpu + "[[tier]]\nkind = \"hbm\"\n[workload]\ntrace = \"t.jsonl\"\n[[policy]]\neviction = \"lru\"\n"
}

func stepNs(t *testing.T, model, gpu string, b sim.StepBatch) float64 {
	t.Helper()
	sc := parse(t, geometryScenario(model, gpu))
	return StepModel(sc).StepNs(&b)
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6*want {
		t.Errorf("%s: %.6f ns, want %.6f", what, got, want)
	}
}

// TP2: llama-3.1-8b (8,030,261,248 params, hidden 4096, 32 layers) on
// two H100s. Every layer all-reduces the step's activations twice
// (o_proj, down_proj): tokens x 4096 x 2 bytes, of which a ring over 2
// GPUs sends 2(2-1)/2 = 1x over each link in 2(2-1) = 2 latency steps.
func TestGoldenTP2Step(t *testing.T) {
	model := "preset = \"llama-3.1-8b\"\n"

	// A 2048-token prefill over PCIe Gen4 (32 GB/s each way, 3 us):
	//   FLOPs   = 2 x 8,030,261,248 x 2048 + 4 x 32 x 32 x 128 x (2048 x 2049 / 2)
	//           = 32,891,950,071,808 + 524,288 x 2,098,176 = 33,991,998,570,496
	//   compute = 33,991,998,570,496 / (989e12 x 2 x 0.5) = 34,370,069.33
	//   bytes   = 16,060,522,496 + 131,072 x 2048 = 16,328,957,952
	//   memory  = 16,328,957,952 / (3.35e12 x 2 x 0.8) = 3,046,447.38
	//   one all-reduce = 2048 x 4096 x 2 = 16,777,216 B / 32e9 + 2 x 3000
	//                  = 524,288 + 6,000 = 530,288; 64 of them = 33,938,432
	//   step    = 34,370,069.33 + 1,000,000 + 33,938,432 = 69,308,501.33
	prefill := sim.StepBatch{PrefillTokens: 2048, PrefillSeqs: 1, AttnPairs: 2048 * 2049 / 2}
	near(t, "prefill over pcie4", stepNs(t, model, "preset = \"h100\"\ntp = 2\ninterconnect = \"pcie4\"\n", prefill), 69_308_501.333161)
	// Without an interconnect the collectives are free, as before.
	near(t, "prefill, no interconnect", stepNs(t, model, "preset = \"h100\"\ntp = 2\n", prefill), 35_370_069.333161)

	// One decode after 1023 tokens over NVLink 4 (450 GB/s, 1 us):
	//   FLOPs   = 2 x 8,030,261,248 + 524,288 x 1024 = 16,597,393,408
	//   compute = 16,597,393,408 / 989e12 = 16,781.995
	//   bytes   = 16,060,522,496 + 131,072 x 1024 = 16,194,740,224
	//   memory  = 16,194,740,224 / 5.36e12 = 3,021,406.758
	//   one all-reduce = 8192 B / 450e9 + 2 x 1000 = 18.204 + 2000 = 2,018.204
	//   step    = 3,021,406.758 + 1,000,000 + 64 x 2,018.204 = 4,150,571.843
	decode := sim.StepBatch{DecodeSeqs: 1, ContextTokens: 1023, AttnPairs: 1024}
	near(t, "decode over nvlink4", stepNs(t, model, "preset = \"h100\"\ntp = 2\ninterconnect = \"nvlink4\"\n", decode), 4_150_571.842653)
}

// MoE: qwen3-30b-a3b (30,532,122,624 params; 48 layers of 128 experts of
// 3 x 2048 x 768 = 4,718,592 params, 8 per token; 3,353,032,704 active).
func TestGoldenMoEStep(t *testing.T) {
	model := "preset = \"qwen3-30b-a3b\"\n"
	// Four decodes after 1000 tokens each, one H100:
	//   FLOPs   = 2 x 3,353,032,704 x 4 + 4 x 48 x 32 x 128 x (4 x 1001)
	//           = 26,824,261,632 + 786,432 x 4004 = 29,973,135,360
	//   compute = 29,973,135,360 / 494.5e12 = 60,613.01
	//   dense   = 30,532,122,624 - 48 x 128 x 4,718,592 = 1,541,093,376 params = 3,082,186,752 B
	//   experts = 128 x (1 - (120/128)^4) = 128 x 0.2275238 = 29.123046875 per layer
	//             (of 32 picks), 48 x 29.123046875 x 9,437,184 B = 13,192,298,496 B
	//   KV      = 48 x 2 x 4 x 128 x 2 = 98,304 B/token x (4000 + 4) = 393,609,216 B
	//   memory  = 16,668,094,464 / 2.68e12 = 6,219,438.23
	//   step    = 6,219,438.23 + 1,000,000 = 7,219,438.23
	decode := sim.StepBatch{DecodeSeqs: 4, ContextTokens: 4000, AttnPairs: 4 * 1001}
	near(t, "moe decode", stepNs(t, model, "preset = \"h100\"\n", decode), 7_219_438.232836)

	// The same on two H100s as dp = 2, ep = 2 over NVLink 4: each dp group
	// reads its own dense weights, the experts are read once, and each MoE
	// layer dispatches and combines (tp = 1: no all-reduce):
	//   memory  = (2 x 3,082,186,752 + 13,192,298,496 + 393,609,216) / 5.36e12 = 3,684,753.96
	//   one all-to-all = 4/2 tokens x 8 experts x 4096 B x (2-1)/2 = 32,768 B / 450e9 + 1000
	//                  = 72.818 + 1000 = 1,072.818; 2 x 48 of them = 102,990.51
	//   step    = 3,684,753.96 + 1,000,000 + 102,990.51 = 4,787,744.46
	near(t, "moe decode, dp 2 ep 2", stepNs(t, model, "preset = \"h100\"\ndp = 2\nep = 2\ninterconnect = \"nvlink4\"\n", decode), 4_787_744.464876)
}

// Sliding window: gemma-3-27b (62 layers, every 6th global: 10 full, 52
// sliding of window 1024; 16 KV heads of 128: 8,192 B per token and
// layer) decoding one token after 4000 on one H100:
//
//	FLOPs   = 2 x 27,009,346,304 + 4 x 10 x 32 x 128 x 4001 + 4 x 52 x 32 x 128 x min(4001, 1024)
//	        = 54,018,692,608 + 655,523,840 + 872,415,232 = 55,546,631,680
//	compute = 55,546,631,680 / 494.5e12 = 112,328.88
//	bytes   = 54,018,692,608 + 10 x 8192 x 4001 + 52 x 8192 x (min(4000, 1024) + 1)
//	        = 54,018,692,608 + 327,761,920 + 436,633,600 = 54,783,088,128
//	memory  = 54,783,088,128 / 2.68e12 = 20,441,450.79
//	step    = 21,441,450.79
func TestGoldenSlidingWindowStep(t *testing.T) {
	decode := sim.StepBatch{DecodeSeqs: 1, ContextTokens: 4000, AttnPairs: 4001}
	near(t, "gemma-3 decode", stepNs(t, "preset = \"gemma-3-27b\"\n", "preset = \"h100\"\n", decode), 21_441_450.794030)
}
