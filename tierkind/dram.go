package tierkind

func init() {
	Register(Spec{Name: "dram", Rank: 3, Added: 3, Brief: "pageable host memory",
		Capacity: 512 << 30, Bandwidth: 50e9, Latency: 100, CostPerGB: 5, Calibrated: "dram"})
}
