package hw

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeviceNotes: the tiers' notes read the same probes doctor reports,
// over a made-up /sys.
func TestDeviceNotes(t *testing.T) {
	root := t.TempDir()
	if got := rdmaState(root); got != "no RDMA device in /sys/class/infiniband" {
		t.Errorf("empty machine: rdma %q", got)
	}
	if got := fabricState(root); got != "no NVMe-oF controller here: a local disk stands in" {
		t.Errorf("empty machine: nvme %q", got)
	}
	for name, body := range map[string]string{
		"sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
		"sys/class/nvme/nvme0/transport":            "pcie\n",
		"sys/class/nvme/nvme1/transport":            "tcp\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := rdmaState(root); got != "RDMA device mlx5_0 present; kvsim has no verbs driver yet" {
		t.Errorf("rdma %q", got)
	}
	if got := fabricState(root); got != "an NVMe-oF controller (tcp) is present: put --dir on its namespace" {
		t.Errorf("nvme %q", got)
	}
	if d := ProbeRDMA(root); len(d) != 1 || len(d[0].Ports) != 1 || d[0].Ports[0].State != "4: ACTIVE" {
		t.Errorf("ProbeRDMA = %+v", d)
	}
}

// TestTierKinds: every kind a scenario may name has one registration, and
// a kind none registers is refused by name.
func TestTierKinds(t *testing.T) {
	want := []string{"dram", "hbm", "nvmeof", "pinned", "remote_dram", "ssd"}
	if got := TierKinds(); !slices.Equal(got, want) {
		t.Errorf("TierKinds = %v, want %v", got, want)
	}
	_, err := OpenStores([]TierSpec{{Name: "x", Kind: "tape", Capacity: 1 << 20}}, TierOptions{SlotBytes: 4096})
	if err == nil || !strings.Contains(err.Error(), `unknown kind "tape"`) {
		t.Errorf("unknown kind: %v", err)
	}
}
