package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"kvsim/scenario"
)

func runSize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("size", "kvsim size [--scenario FILE | --preset MODEL] [--layers N --kv-heads N --head-dim N] [--dtype T] [--tokens N] [--hbm SIZE] [--json]", stderr)
	scen := fs.String("scenario", "", "take the model and the hbm tier's capacity from this scenario `file`")
	preset := fs.String("preset", "", "take the model from this [model] preset: "+strings.Join(scenario.ModelPresets(), ", "))
	layers := fs.Int("layers", 0, "transformer layers")
	kvHeads := fs.Int("kv-heads", 0, "KV heads per layer")
	headDim := fs.Int("head-dim", 0, "head dimension")
	dtype := fs.String("dtype", "bf16", "element type: "+strings.Join(scenario.DTypes(), ", "))
	blockTokens := fs.Int("block-tokens", 512, "tokens per KV block")
	tokens := fs.Int64("tokens", 0, "tokens per request (0: no per-request figures)")
	hbm := fs.String("hbm", "", "HBM budget for KV, e.g. 60GiB (default: the scenario's hbm tier)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInputf("size: unexpected argument %q", pos[0])
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	m := scenario.Model{DType: *dtype, BlockTokens: *blockTokens}
	var budget int64
	haveBudget := false
	var tiers []scenario.Tier
	if *scen != "" {
		s, err := scenario.Load(*scen)
		if err != nil {
			return badInput(err)
		}
		m, budget, haveBudget, tiers = s.Model, s.Tiers[0].Capacity, true, s.Tiers
	}
	if *preset != "" {
		if *scen != "" {
			return badInputf("--preset: not with --scenario (its [model] preset says which)")
		}
		pm, ok := scenario.PresetModel(*preset)
		if !ok {
			return badInputf("--preset: unknown model preset %q (known: %s)", *preset, strings.Join(scenario.ModelPresets(), ", "))
		}
		m = pm
	}
	// Explicit flags override the scenario.
	for _, f := range []struct {
		name string
		dst  *int
		val  int
	}{{"layers", &m.Layers, *layers}, {"kv-heads", &m.KVHeads, *kvHeads}, {"head-dim", &m.HeadDim, *headDim}, {"block-tokens", &m.BlockTokens, *blockTokens}} {
		if set[f.name] {
			*f.dst = f.val
		}
		if *f.dst <= 0 {
			if !set[f.name] && *scen == "" && *preset == "" {
				return badInputf("--%s is required (or --scenario)", f.name)
			}
			return badInputf("--%s: must be > 0", f.name)
		}
	}
	if set["dtype"] {
		m.DType, m.KVDType = *dtype, "" // --dtype is the KV cache's
	}
	if m.KVDTypeBytes() == 0 {
		return badInputf("--dtype: unknown dtype %q (known: %s)", m.KVType(), strings.Join(scenario.DTypes(), ", "))
	}
	if set["hbm"] {
		if budget, err = scenario.ParseBytes(*hbm); err != nil {
			return badInputf("--hbm: %v", err)
		}
		haveBudget = true
	}
	if haveBudget && budget <= 0 {
		return badInputf("--hbm: must be > 0")
	}
	if *tokens < 0 {
		return badInputf("--tokens: must be >= 0")
	}

	var hbmBudget *int64
	if haveBudget {
		hbmBudget = &budget
	}
	r, err := m.Size(*tokens, hbmBudget, tiers)
	if err != nil {
		return badInputf("size: %v", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return printSize(stdout, r)
}

func printSize(w io.Writer, r *scenario.SizeReport) error {
	b := func(n int64) string { return fmt.Sprintf("%s (%d bytes)", scenario.FormatBytes(n), n) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "model:        %d layers x %d kv heads x head_dim %d, %s (%d bytes/element)\n",
		r.Layers, r.KVHeads, r.HeadDim, r.DType, r.DTypeBytes)
	if r.KVLoraRank > 0 {
		fmt.Fprintf(&sb, "MLA:          one latent of %d + rope %d elements per layer (no K/V split): %s per token and layer\n",
			r.KVLoraRank, r.QKRopeDim, b(r.LayerBytesPerToken))
	}
	if r.LocalLayers > 0 {
		fmt.Fprintf(&sb, "full layers:  %d of %d keep every token, %s per token and layer\n", r.FullLayers, r.Layers, b(r.LayerBytesPerToken))
		fmt.Fprintf(&sb, "%-13s %d, window %d: %s per token, at most %s per request (outside the block cache)\n",
			r.LocalKind+" layers:", r.LocalLayers, r.Window, b(r.LocalBytesPerToken), b(r.LocalBytesMax))
	}
	fmt.Fprintf(&sb, "per token:    %s\n", b(r.BytesPerToken))
	fmt.Fprintf(&sb, "per block:    %s, %d tokens\n", b(r.BytesPerBlock), r.BlockTokens)
	if r.BytesPerRequest != nil {
		fmt.Fprintf(&sb, "per request:  %s, %d tokens", b(*r.BytesPerRequest), r.Tokens)
		if *r.BlockBytesPerRequest != *r.BytesPerRequest {
			fmt.Fprintf(&sb, "; %d whole blocks take %s", *r.BlocksPerRequest, b(*r.BlockBytesPerRequest))
		} else {
			fmt.Fprintf(&sb, " = %d blocks", *r.BlocksPerRequest)
		}
		sb.WriteByte('\n')
		if r.LocalBytesRequest != nil {
			fmt.Fprintf(&sb, "%-13s %s in the %d %s layers\n", "", b(*r.LocalBytesRequest), r.LocalLayers, r.LocalKind)
		}
	}
	if r.Experts > 0 {
		fmt.Fprintf(&sb, "params:       %.4g total, %.4g active (%d of %d experts per token in %d layers)\n",
			r.Params, r.ActiveParams, r.ExpertsPerToken, r.Experts, r.MoELayers)
	}
	if r.HBMBytes != nil {
		fmt.Fprintf(&sb, "HBM budget:   %s holds %d tokens, %d blocks\n", b(*r.HBMBytes), *r.TokensFit, *r.BlocksFit)
		if r.RequestsFit != nil {
			fmt.Fprintf(&sb, "requests fit: %d of %d tokens\n", *r.RequestsFit, r.Tokens)
		}
	}
	for i, t := range r.Tiers {
		label := ""
		if i == 0 {
			label = "tiers:"
		}
		fmt.Fprintf(&sb, "%-13s %-12s %-12s %10s = %d blocks\n", label, t.Name, t.Kind, scenario.FormatBytes(t.CapacityBytes), t.Blocks)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}
