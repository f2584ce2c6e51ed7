package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func size(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errw bytes.Buffer
	err := runSize(context.Background(), args, &out, &errw)
	return out.String(), err
}

func TestSizeExample(t *testing.T) {
	out, err := size(t, "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "bf16", "--tokens", "16384", "--hbm", "60GiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"per token:    128 KiB (131072 bytes)",
		"per block:    64 MiB (67108864 bytes), 512 tokens",
		"per request:  2 GiB (2147483648 bytes), 16384 tokens = 32 blocks",
		"HBM budget:   60 GiB (64424509440 bytes) holds 491520 tokens, 960 blocks",
		"requests fit: 30 of 16384 tokens",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSizeJSON(t *testing.T) {
	out, err := size(t, "--json", "--layers=32", "--kv-heads=8", "--head-dim=128", "--tokens=16384", "--hbm=60GiB")
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]float64{
		"bytes_per_token": 131072, "bytes_per_block": 64 << 20, "bytes_per_request": 2 << 30,
		"requests_fit": 30, "blocks_per_request": 32, "hbm_bytes": 60 << 30, "dtype_bytes": 2,
	}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s = %v; want %v", k, r[k], v)
		}
	}
	if r["dtype"] != "bf16" {
		t.Errorf("dtype = %v", r["dtype"])
	}
	// Without --tokens and --hbm the optional figures are absent.
	out, err = size(t, "--json", "--layers=1", "--kv-heads=1", "--head-dim=1")
	if err != nil {
		t.Fatal(err)
	}
	r = nil
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"requests_fit", "bytes_per_request", "hbm_bytes"} {
		if _, ok := r[k]; ok {
			t.Errorf("%s present: %s", k, out)
		}
	}
	if r["bytes_per_token"] != 4.0 {
		t.Errorf("bytes_per_token = %v", r["bytes_per_token"])
	}
}

func TestSizePartialBlock(t *testing.T) {
	out, err := size(t, "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--tokens", "1000", "--hbm", "1GiB")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 tokens = 125000 KiB exactly, but 2 whole blocks (128 MiB) in the cache: 8 fit in 1 GiB.
	for _, want := range []string{"2 whole blocks take 128 MiB (134217728 bytes)", "requests fit: 8 of 1000 tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSizeScenario(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.toml")
	src := `[model]
layers = 32
kv_heads = 8
head_dim = 128
[[tier]]
kind = "hbm"
capacity = "60GiB"
[[tier]]
name = "host"
kind = "dram"
capacity = "1TiB"
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := size(t, "--scenario", p, "--tokens", "16384")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "128 KiB") || !strings.Contains(out, "requests fit: 30 of") ||
		!strings.Contains(out, "= 960 blocks\n") || !strings.Contains(out, "host") || !strings.Contains(out, "= 16384 blocks\n") {
		t.Errorf("scenario output:\n%s", out)
	}
	// Flags override the scenario: fp8 halves the size, so 60 fit.
	out, err = size(t, "--scenario", p, "--tokens", "16384", "--dtype", "fp8")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "per token:    64 KiB") || !strings.Contains(out, "requests fit: 60 of") {
		t.Errorf("override output:\n%s", out)
	}
	out, err = size(t, "--scenario", p, "--tokens", "16384", "--hbm", "30GiB")
	if err != nil || !strings.Contains(out, "requests fit: 15 of") || !strings.Contains(out, "= 480 blocks\n") {
		t.Errorf("--hbm override: %v\n%s", err, out)
	}
}

func TestSizeBadInput(t *testing.T) {
	base := []string{"--layers", "32", "--kv-heads", "8", "--head-dim", "128"}
	cases := []struct {
		args []string
		want string
	}{
		{append(base, "--dtype", "fp13"), `--dtype: unknown dtype "fp13" (known: fp32, bf16, fp16, fp8, int8)`},
		{append(base, "--hbm", "60Gib"), `--hbm: bad size "60Gib": unknown unit "Gib"`},
		{append(base, "--hbm", "0"), `--hbm: must be > 0`},
		{append(base, "--tokens", "-1"), `--tokens: must be >= 0`},
		{append(base, "--block-tokens", "0"), `--block-tokens: must be > 0`},
		{[]string{"--kv-heads", "8", "--head-dim", "128"}, `--layers is required (or --scenario)`},
		{append(base, "--layers", "-1"), `--layers: must be > 0`},
		{append(base, "--layers", "x"), `invalid value "x" for flag -layers`},
		{append(base, "--bogus"), `flag provided but not defined: -bogus`},
		{append(base, "extra"), `size: unexpected argument "extra"`},
		{[]string{"--scenario", "/nonexistent/s.toml"}, `/nonexistent/s.toml: no such file or directory`},
		{[]string{"--layers", "16777216", "--kv-heads", "16777216", "--head-dim", "16777216", "--dtype", "fp32"}, `bytes per token overflow`},
	}
	for _, c := range cases {
		_, err := size(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v; want %q", c.args, err, c.want)
			continue
		}
		var ie *inputError
		if !errors.As(err, &ie) {
			t.Errorf("%v: %v is not bad input (exit status 2)", c.args, err)
		}
	}
}

// The geometry a preset brings: MLA's latent, local layers outside the
// block cache, active parameters.
func TestSizePresetGeometry(t *testing.T) {
	out, err := size(t, "--preset", "deepseek-v3", "--tokens", "4096")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// (512 + 64) x 2 bytes = 1,152 per layer, x 61 layers = 70,272 a token.
		"MLA:          one latent of 512 + rope 64 elements per layer (no K/V split): 1.13 KiB (1152 bytes) per token and layer",
		"per token:    68.63 KiB (70272 bytes)",
		"per block:    34.31 MiB (35979264 bytes), 512 tokens",
		"params:       6.71e+11 total, 3.755e+10 active (8 of 256 experts per token in 58 layers)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = size(t, "--preset", "gpt-oss-120b", "--tokens", "4096", "--hbm", "40GiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// 2 x 8 x 64 x 2 = 2,048 per layer; 18 full layers keep every token.
		"full layers:  18 of 36 keep every token, 2 KiB (2048 bytes) per token and layer",
		"sliding layers: 18, window 128: 36 KiB (36864 bytes) per token, at most 4.5 MiB (4718592 bytes) per request (outside the block cache)",
		"per block:    18 MiB (18874368 bytes), 512 tokens",
		// 40 GiB / (8 blocks x 18 MiB + 4.5 MiB) = 42,949,672,960 / 155,713,536 = 275.8.
		"requests fit: 275 of 4096 tokens",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := size(t, "--preset", "gpt-9"); err == nil || !strings.Contains(err.Error(), `--preset: unknown model preset "gpt-9"`) {
		t.Errorf("unknown preset: %v", err)
	}
	// --dtype sets the KV cache's element: fp8 halves the latent.
	if out, _ := size(t, "--preset", "deepseek-v3", "--dtype", "fp8"); !strings.Contains(out, "per token:    34.31 KiB (35136 bytes)") {
		t.Errorf("fp8 KV:\n%s", out)
	}
}

// --json carries the geometry's fields where a model has them, and only
// there (a plain model's JSON is as before).
func TestSizeJSONGeometry(t *testing.T) {
	out, err := size(t, "--json", "--preset", "gemma-3-27b", "--tokens", "512")
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// 8,192 B per token and layer; 10 full layers, 52 sliding of window 1024.
	for k, v := range map[string]any{"layer_bytes_per_token": 8192.0, "full_layers": 10.0, "local_layers": 52.0, "local_kind": "sliding",
		"window": 1024.0, "bytes_per_token": 81920.0, "local_bytes_per_token": 425984.0, "local_bytes_per_request_max": 436207616.0,
		"local_bytes_per_request": 425984.0 * 512} {
		if r[k] != v {
			t.Errorf("%s = %v; want %v", k, r[k], v)
		}
	}
	out, _ = size(t, "--json", "--layers=32", "--kv-heads=8", "--head-dim=128")
	for _, k := range []string{"layer_bytes_per_token", "full_layers", "params", "kv_lora_rank"} {
		if strings.Contains(out, `"`+k+`"`) {
			t.Errorf("a plain model's JSON has %s:\n%s", k, out)
		}
	}
}
