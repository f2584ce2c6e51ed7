package tierkind

import (
	"kvsim/internal/endpoint"
	"kvsim/param"
)

func init() {
	Register(Spec{Name: "remote_dram", Rank: 6, Added: 5, Article: "a", Brief: "another node's DRAM: Redis/Valkey, or a kvsim serve over RDMA",
		Capacity: 1 << 40, Bandwidth: 50e9, Latency: 3_000, CostPerGB: 5, Calibrated: "remote",
		Keys: []param.Key{{Name: "endpoint", Type: param.String, DefaultDoc: "none: emulated in local memory", Example: `"redis://10.0.0.2:6379"`,
			Doc:   "remote_dram only: the Redis or Valkey server that\nreplay --real keeps the tier in (redis://HOST:PORT\nor valkey://HOST:PORT, optionally /DB), or the\nkvsim serve --rdma whose memory it writes and reads\nby RDMA (rdma://HOST:PORT, optionally\n?device=NAME&gid_index=N; docs/rdma.md); the\nsimulator does not read it",
			Check: func(v any) error { _, err := endpoint.Parse(v.(string)); return err }}},
	})
}
