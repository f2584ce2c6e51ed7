package hw

import (
	"os"
	"path/filepath"
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
	if got := rdmaState(root); got != "RDMA device mlx5_0 present" {
		t.Errorf("rdma %q", got)
	}
	if got := fabricState(root); got != "an NVMe-oF controller (tcp) is present: put --dir on its namespace" {
		t.Errorf("nvme %q", got)
	}
	if d := ProbeRDMA(root); len(d) != 1 || len(d[0].Ports) != 1 || d[0].Ports[0].State != "4: ACTIVE" {
		t.Errorf("ProbeRDMA = %+v", d)
	}
}

// TestTierKinds: a kind none registers is refused by name (experiment's
// TestTierKindsMatch checks that every kind a scenario may name has one).
func TestTierKinds(t *testing.T) {
	_, err := OpenStores([]TierSpec{{Name: "x", Kind: "tape", Capacity: 1 << 20}}, TierOptions{SlotBytes: 4096})
	if err == nil || !strings.Contains(err.Error(), `unknown kind "tape"`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestDescribeNamespace: the label of an nvmeof tier's device claims a
// fabric only for an NVMe namespace whose controller's transport is one.
func TestDescribeNamespace(t *testing.T) {
	root := t.TempDir()
	for name, tr := range map[string]string{"nvme0n1": "pcie", "nvme1n1": "tcp", "nvme2n1": "loop", "nvme3n1": "rdma"} {
		p := filepath.Join(root, "sys/class/block", name, "device", "transport")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(tr+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path   string
		block  bool
		want   string
		fabric bool
	}{
		{"/dev/nvme1n1", true, "NVMe-oF namespace nvme1n1 over tcp", true},
		{"/dev/nvme3n1", true, "NVMe-oF namespace nvme3n1 over rdma", true},
		{"/dev/nvme0n1", true, "NVMe namespace nvme0n1 on a local PCIe drive, not a fabric", false},
		{"/dev/nvme2n1", true, "NVMe namespace nvme2n1 of the loop target (the fabric protocol on this host, no network)", false},
		{"/dev/nvme9n1", true, "NVMe namespace nvme9n1 (transport unknown)", false},
		{"/dev/loop7", true, "loop device loop7 standing in for an NVMe-oF namespace (no fabric)", false},
		{"/dev/sda", true, "block device sda, not an NVMe namespace (no fabric)", false},
		{"/srv/ns.img", false, "a file standing in for an NVMe-oF namespace (no fabric)", false},
	} {
		if got, fabric := DescribeNamespace(root, c.path, c.block); got != c.want || fabric != c.fabric {
			t.Errorf("%s: %q (fabric %v), want %q (%v)", c.path, got, fabric, c.want, c.fabric)
		}
	}
}
