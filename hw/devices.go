package hw

import (
	"os"
	"path/filepath"
	"strings"
)

// The device probes below are the one place that reads what RDMA and NVMe
// hardware a machine has: the tiers note it, doctor reports it. root
// prefixes every path ("" for this machine; tests pass a made-up tree).

// RDMADevice is one device under /sys/class/infiniband.
type RDMADevice struct {
	Name  string
	Ports []RDMAPort
}

// RDMAPort is one port of an RDMA device, as sysfs words it.
type RDMAPort struct {
	Port, LinkLayer, State, Rate string
}

// ProbeRDMA lists the RDMA devices and their ports.
func ProbeRDMA(root string) []RDMADevice {
	devs, _ := filepath.Glob(filepath.Join(root, "/sys/class/infiniband/*"))
	var out []RDMADevice
	for _, d := range devs {
		dev := RDMADevice{Name: filepath.Base(d)}
		ports, _ := filepath.Glob(filepath.Join(d, "ports", "*"))
		for _, p := range ports {
			dev.Ports = append(dev.Ports, RDMAPort{Port: filepath.Base(p), LinkLayer: readSys(p, "link_layer"), State: readSys(p, "state"), Rate: readSys(p, "rate")})
		}
		out = append(out, dev)
	}
	return out
}

// NVMeController is one controller under /sys/class/nvme.
type NVMeController struct {
	Name, Transport, Model, Address string
}

// Fabric reports whether the controller is NVMe-over-Fabrics (not PCIe).
func (c NVMeController) Fabric() bool { return c.Transport != "" && c.Transport != "pcie" }

// ProbeNVMe lists the NVMe controllers.
func ProbeNVMe(root string) []NVMeController {
	ctrls, _ := filepath.Glob(filepath.Join(root, "/sys/class/nvme/*"))
	var out []NVMeController
	for _, d := range ctrls {
		out = append(out, NVMeController{Name: filepath.Base(d), Transport: readSys(d, "transport"), Model: readSys(d, "model"), Address: readSys(d, "address")})
	}
	return out
}

// readSys is the trimmed content of dir/name, "" when unreadable.
func readSys(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return strings.TrimSpace(string(b))
}

// DescribeNamespace says what the path an nvmeof tier's device names
// really is, so that a label never claims a fabric where there is none:
// an NVMe namespace with its controller's transport (tcp, rdma and fc are
// fabrics; pcie is a local drive; loop is the NVMe loop target, the
// fabric protocol on one host), a loop device or a file standing in for a
// namespace, or another block device. fabric is true only for tcp, rdma
// and fc.
func DescribeNamespace(root, path string, blockDevice bool) (desc string, fabric bool) {
	if !blockDevice {
		return "a file standing in for an NVMe-oF namespace (no fabric)", false
	}
	name := path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		name = p
	}
	name = filepath.Base(name)
	switch {
	case strings.HasPrefix(name, "loop"):
		return "loop device " + name + " standing in for an NVMe-oF namespace (no fabric)", false
	case !strings.HasPrefix(name, "nvme"):
		return "block device " + name + ", not an NVMe namespace (no fabric)", false
	}
	tr := readSys(filepath.Join(root, "/sys/class/block", name, "device"), "transport")
	switch tr {
	case "tcp", "rdma", "fc":
		return "NVMe-oF namespace " + name + " over " + tr, true
	case "pcie":
		return "NVMe namespace " + name + " on a local PCIe drive, not a fabric", false
	case "loop":
		return "NVMe namespace " + name + " of the loop target (the fabric protocol on this host, no network)", false
	case "":
		return "NVMe namespace " + name + " (transport unknown)", false
	}
	return "NVMe namespace " + name + " over " + tr, false
}
