package sim

import "math"

// Collectives is the time a step spends in the communication of tensor
// and expert parallelism, added to its roofline time: vLLM runs the
// collectives on the compute stream between the layers' kernels, so
// they do not overlap compute (docs/engine.md).
type Collectives struct {
	TP, DP, EP      int     // tensor-parallel GPUs per group, attention data-parallel groups, GPUs holding whole experts
	Bandwidth       float64 // bytes/s one GPU sends each way; 0: collectives are free
	LatencyNs       float64 // per step of a collective
	Layers          int
	MoELayers       int     // layers with routed experts
	TokenBytes      float64 // one token's activations: hidden x activation bytes
	ExpertsPerToken float64
}

// ringAllReduceNs is a ring all-reduce of bytes over n GPUs: each sends
// 2(n-1)/n of the bytes over its link, in 2(n-1) steps.
func (c *Collectives) ringAllReduceNs(n int, bytes float64) float64 {
	if n <= 1 {
		return 0
	}
	steps := float64(2 * (n - 1))
	return steps/float64(n)*bytes/c.Bandwidth*1e9 + steps*c.LatencyNs
}

// allToAllNs is one dispatch (or combine) of tokens' activations to the
// experts that ep GPUs hold: a GPU sends each of its tokens to
// ExpertsPerToken experts, (ep-1)/ep of them on another GPU, all peers
// at once (one latency).
func (c *Collectives) allToAllNs(tokens float64) float64 {
	ep := float64(c.EP)
	bytes := tokens / ep * c.ExpertsPerToken * c.TokenBytes * (ep - 1) / ep
	return bytes/c.Bandwidth*1e9 + c.LatencyNs
}

// Ns is the collectives' time in a step of tokens new tokens. Each of the
// DP groups computes tokens/DP of them. Per layer: an all-reduce of the
// group's activations after attention (o_proj) and one after the MLP
// (down_proj) or the experts. With EP > 1 across DP > 1 groups a MoE
// layer instead dispatches and combines its tokens in two all-to-alls;
// with one group every GPU has every token, and vLLM all-reduces the
// experts' partial sums as for tensor-parallel experts.
func (c *Collectives) Ns(tokens float64) float64 {
	if !(c.Bandwidth > 0) || !(tokens > 0) {
		return 0
	}
	ar := c.ringAllReduceNs(c.TP, tokens/float64(max(1, c.DP))*c.TokenBytes)
	ns := float64(c.Layers) * ar // after attention
	if c.EP > 1 && c.DP > 1 {
		ns += float64(c.Layers-c.MoELayers)*ar + float64(c.MoELayers)*2*c.allToAllNs(tokens)
	} else {
		ns += float64(c.Layers) * ar // after the MLP or the tensor-parallel experts
	}
	return ns
}

// DistinctExperts is the expected number of the experts experts that
// tokens tokens, each routed to k distinct ones uniformly at random,
// touch: a given expert escapes one token with probability (E-k)/E. It
// is an upper bound for real routers: for a given number of picks the
// expected distinct count is largest when every expert is equally
// likely, and skewed or correlated routing (tokens of one sequence
// favour the same experts) touches fewer.
func DistinctExperts(experts, k, tokens float64) float64 {
	if !(tokens > 0) || !(experts > 0) {
		return 0
	}
	return experts * (1 - math.Pow((experts-k)/experts, tokens))
}
