package tierkind

import (
	"fmt"
	"path/filepath"

	"kvsim/param"
)

func init() {
	Register(Spec{Name: "nvmeof", Rank: 5, Added: 6, Article: "an", Brief: "an NVMe-oF namespace: remote flash over a fabric",
		Capacity: 15_360_000_000_000, Bandwidth: 6e9, Latency: 20_000, CostPerGB: 0.1, Calibrated: "ssd", OnDisk: true,
		Keys: []param.Key{{Name: "device", Type: param.String, DefaultDoc: "none: a bucket store in replay's --dir", Example: `"/dev/nvme1n1"`,
			Doc: "nvmeof only: the namespace (or a file) replay --real keeps the\ntier in, in fixed slots by O_DIRECT; claimed only if its first\n64 KiB are zero or kvsim's; the simulator does not read it",
			Check: func(v any) error {
				if s := v.(string); !filepath.IsAbs(s) {
					return fmt.Errorf("%q: want an absolute path, e.g. /dev/nvme1n1", s)
				}
				return nil
			}}},
	})
}
