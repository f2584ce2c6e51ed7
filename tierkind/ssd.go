package tierkind

func init() {
	Register(Spec{Name: "ssd", Rank: 4, Added: 4, Brief: "a local NVMe drive",
		Capacity: 3_840_000_000_000, Bandwidth: 7e9, Latency: 10_000, CostPerGB: 0.3, Calibrated: "ssd", OnDisk: true})
}
