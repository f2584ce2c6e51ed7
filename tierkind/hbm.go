package tierkind

func init() {
	Register(Spec{Name: "hbm", Rank: 1, Added: 1, Brief: "the GPU's memory: the first tier, the only one the GPU computes from",
		Capacity: 60 << 30, Bandwidth: 2e12, Latency: 100, CostPerGB: 20, Calibrated: "hbm"})
}
