package tierkind

func init() {
	Register(Spec{Name: "pinned", Rank: 2, Added: 2, Brief: "page-locked host memory the GPU copies to and from directly",
		Capacity: 64 << 30, Bandwidth: 25e9, Latency: 100, CostPerGB: 5, Calibrated: "pinned"})
}
