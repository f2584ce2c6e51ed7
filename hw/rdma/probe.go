package rdma

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The verbs path's failures, for errors.Is.
var (
	// ErrNoLibrary: libibverbs cannot be loaded.
	ErrNoLibrary = errors.New("libibverbs not available")
	// ErrNoDevice: the library loads but sees no device (or no usable port).
	ErrNoDevice = errors.New("no RDMA device")
	// ErrPortDown: the chosen port is not ACTIVE.
	ErrPortDown = errors.New("RDMA port not active")
	// ErrMemlock: ibv_reg_mr was refused for the locked-memory limit.
	ErrMemlock = errors.New("memory registration refused by the locked-memory limit")
	// ErrUnsupported: no verbs path on this platform (64-bit Linux only).
	ErrUnsupported = errors.New("the RDMA verbs path is Linux x86-64/arm64 only")
)

// kindErr is an error of a kind (one of the Err values) worded freely.
type kindErr struct {
	kind error
	msg  string
}

func (e kindErr) Error() string { return e.msg }
func (e kindErr) Unwrap() error { return e.kind }

func errorOf(kind error, format string, args ...any) error {
	return kindErr{kind, fmt.Sprintf(format, args...)}
}

// LibName is the library loaded by default: Debian's libibverbs1 (with
// ibverbs-providers for the NIC's user-space driver). KVSIM_IBVERBS names
// another file.
const LibName = "libibverbs.so.1"

// installHint says what to install when the library is missing.
const installHint = "install Debian's libibverbs1 and ibverbs-providers (apt-get install libibverbs1 ibverbs-providers), or set KVSIM_IBVERBS=/path/to/libibverbs.so.1"

// memlockFix is how to lift the limit ibv_reg_mr runs into.
const memlockFix = "raise the locked-memory limit: ulimit -l unlimited (limits.conf: '* - memlock unlimited'; systemd: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1)"

// PortInfo is one port as ibv_query_port and ibv_query_gid report it.
type PortInfo struct {
	Num       int
	State     string // ACTIVE, DOWN, ...
	LinkLayer string // InfiniBand, Ethernet (RoCE)
	MTU       int    // active MTU in bytes
	LID       uint16
	GID       [16]byte // GID index 0
	Err       string   // the query failed: why
	mtuCode   uint8
	gidTbl    int
}

// Active reports whether the port can carry traffic.
func (p PortInfo) Active() bool { return p.Err == "" && p.State == portStateNames[portActive] }

// DeviceInfo is one device as ibv_query_device reports it.
type DeviceInfo struct {
	Name      string
	FW        string
	MaxMRSize uint64
	MaxQPWR   int
	MaxCQE    int
	MaxSGE    int
	MaxRdAtom int // max_qp_rd_atom: outstanding RDMA READs a QP may target
	InitRd    int // max_qp_init_rd_atom: outstanding RDMA READs a QP may issue
	Ports     []PortInfo
	Err       string // opening or querying failed: why
}

func (d DeviceInfo) String() string {
	if d.Err != "" {
		return d.Name + ": " + d.Err
	}
	var ports []string
	for _, p := range d.Ports {
		if p.Err != "" {
			ports = append(ports, fmt.Sprintf("port %d: %s", p.Num, p.Err))
			continue
		}
		s := fmt.Sprintf("port %d %s %s", p.Num, p.State, p.LinkLayer)
		if p.Active() {
			s += fmt.Sprintf(" MTU %d", p.MTU)
			if p.LID != 0 {
				s += fmt.Sprintf(" LID %d", p.LID)
			}
		}
		ports = append(ports, s)
	}
	return fmt.Sprintf("%s (max MR %s): %s", d.Name, formatBytes(d.MaxMRSize), strings.Join(ports, ", "))
}

// Probe is what the verbs path finds on this machine.
type Probe struct {
	Lib     string // the library loaded ("" when none)
	Devices []DeviceInfo
	Err     error // nil when some device has an active port
}

// String says what the probe found, in one line.
func (p Probe) String() string {
	if len(p.Devices) == 0 {
		return strings.TrimPrefix(p.Err.Error(), "rdma: ")
	}
	var ds []string
	for _, d := range p.Devices {
		ds = append(ds, d.String())
	}
	s := "libibverbs (" + p.Lib + "): " + strings.Join(ds, "; ")
	if p.Err != nil {
		s += ": " + p.Err.Error()
	}
	return s
}

// Usable reports whether a device with an active port was found.
func (p Probe) Usable() bool { return p.Err == nil }

func formatBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d %s", n, units[i])
}

// Options chooses what Open opens.
type Options struct {
	Device   string        // "" = the first device with an ACTIVE port
	Port     int           // 0 = the device's first ACTIVE port
	GIDIndex int           // the source GID for RoCE (the index of a RoCE v2 GID routes across subnets)
	Timeout  time.Duration // completion and handshake timeout; 0 = 10 s
}
