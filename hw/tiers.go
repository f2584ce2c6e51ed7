package hw

import (
	"fmt"
	"math"
	"strings"

	"kvsim/hw/accel"
	"kvsim/hw/bucket"
	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
	"kvsim/hw/remote"
	"kvsim/hw/store"
)

// TierSpec is one tier of a replay, with its capacity already scaled to
// real bytes.
type TierSpec struct {
	Name     string
	Kind     string // hbm, pinned, dram, ssd, nvmeof, remote_dram
	Capacity int64
	// Endpoint is a remote_dram tier's store, redis://HOST:PORT or
	// valkey://HOST:PORT ("": emulated), and Lanes its connections at most.
	Endpoint string
	Lanes    int
	// Device is an nvmeof tier's block device (/dev/nvmeXnY) or file
	// ("": a bucket store in TierOptions.Dir).
	Device string
}

// TierOptions are the knobs of the real stores.
type TierOptions struct {
	Dir          string // where storage tiers keep their files
	SlotBytes    int    // largest block, in real bytes
	Hugepages    string // DRAM pools: off, try, require
	HugepageSize string // 2MB or 1GB
	Engine       string // auto, io_uring, pread
	QueueDepth   int
	Device       string // "" (first GPU found, else emulated) or "emulated"
	// Storage tiers keep their blocks across runs (see OpenStores). Fresh
	// empties each store after opening it; Identity says what the blocks'
	// keys and sizes mean (the trace, the block sizes), and a store written
	// under another identity is refused unless Fresh; none makes the store
	// scratch, emptied on every open.
	Fresh    bool
	Identity []StoreField
	// Faults, for tests: storage tiers do their I/O through a FaultEngine
	// with this plan over pread/pwrite.
	Faults *bucket.FaultPlan
}

// StoreMarker names the file that marks a storage tier's folder as one
// kvsim made, records what its blocks mean, and is the store's lock.
const StoreMarker = "kvsim-store"

// StoreField is one thing a storage tier's blocks depend on, e.g.
// {"--block-bytes", "65536"}; Key is what a user would change.
type StoreField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// StoreOpen says what opening one storage tier found.
type StoreOpen struct {
	Tier      string   `json:"-"`
	Dir       string   `json:"dir"`
	State     string   `json:"state"`   // "new", "reopened" or "emptied" (Fresh)
	Buckets   int      `json:"buckets"` // sealed buckets recovered
	Blocks    int      `json:"blocks"`  // blocks recovered (before Fresh emptied them)
	Discarded []string `json:"discarded,omitempty"`
}

// Stores are the real stores of a hierarchy and the device behind them.
type Stores struct {
	List   []store.Store
	Notes  []string    // where a fallback happened, and why
	Opened []StoreOpen // one per storage tier, in tier order
	// Left, after Close, is what remote stores could not delete.
	Left   []LeftKeys
	names  []string // per store, its tier
	closed bool
	dev    accel.Device
	pool   *accel.PinnedBufferPool
}

// LeftKeys is what a remote tier's store left on its server at Close.
type LeftKeys struct {
	Tier string
	remote.Left
}

// Close releases the pinned pool (unregistering DRAM while it is still
// mapped), then every store, then the device; a second call does nothing.
// A remote store left keys: Left and a note say which, and how to remove
// them; one that deleted its keys adds a note saying so.
func (s *Stores) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var first error
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
	for i, st := range s.List {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		r, ok := st.(*remote.Store)
		if !ok {
			continue
		}
		if l := r.Left(); l != nil {
			s.Left = append(s.Left, LeftKeys{Tier: s.names[i], Left: *l})
			s.Notes = append(s.Notes, fmt.Sprintf("tier %q: up to %d keys %s are LEFT on %s (%s); remove them with: %s", s.names[i], l.Keys, l.Pattern, l.Server, l.Err, l.Remove))
		} else {
			s.Notes = append(s.Notes, fmt.Sprintf("tier %q: its keys were deleted from %s at the end", s.names[i], r.Backend()))
		}
	}
	if s.dev != nil {
		s.dev.Close()
		s.dev = nil
	}
	return first
}

// OpenStores builds one store per tier. GPU tiers (hbm, pinned) use the
// first CUDA or HIP device found, else are emulated in host memory (and
// say so); remote DRAM is a Redis or Valkey server or a kvsim serve over
// RDMA where the tier names an endpoint, else emulated; DRAM is a memfd
// pool; SSD and NVMe-oF are bucket stores in o.Dir/tier-<name>.
//
// A storage tier's folder is kvsim's only when it holds the marker file
// StoreMarker, written when kvsim creates the store: a folder that exists
// without it (and is not empty) is refused, never used or emptied. The
// marker is also the store's lock, taken before anything in the folder is
// touched and held until Close, so a second process fails at once. The
// store is reopened as it was left (the bucket store recovers it) unless
// o.Fresh; one written under another o.Identity is refused. Without an
// identity a store is scratch: emptied on open, as is one a scratch run left.
func OpenStores(tiers []TierSpec, o TierOptions) (ss *Stores, err error) {
	ss = &Stores{}
	defer func() {
		if err != nil {
			ss.Close()
			ss = nil
		}
	}()
	gpu := false
	for _, t := range tiers {
		gpu = gpu || tierKinds[t.Kind].gpu
	}
	if gpu && o.Device != "emulated" {
		dev, probe := accel.OpenDevice()
		if dev.Kind() == "emulated" {
			dev.Close()
			ss.Notes = append(ss.Notes, "GPU tiers emulated in host memory: "+probe.Why)
		} else {
			ss.dev = dev
			ss.pool = accel.NewPinnedBufferPool(dev, accel.PinnedPoolOptions{})
		}
	}
	if err := fitsMemory(tiers, ss.dev != nil, MemInfo("MemAvailable")); err != nil {
		return ss, err
	}
	if ss.dev != nil {
		if free, _, err := ss.dev.MemInfo(); err == nil {
			if err := fitsDevice(tiers, free, ss.dev.Name()); err != nil {
				return ss, err
			}
		}
	}
	for _, t := range tiers {
		var s store.Store
		var note string
		if k, ok := tierKinds[t.Kind]; ok {
			s, note, err = k.open(ss, t, o)
		} else {
			err = fmt.Errorf("tier %q: unknown kind %q", t.Name, t.Kind)
		}
		if err != nil {
			return ss, fmt.Errorf("tier %q: %w", t.Name, err)
		}
		ss.List, ss.names = append(ss.List, s), append(ss.names, t.Name)
		if note != "" {
			ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: %s", t.Name, note))
		}
	}
	return ss, nil
}

// slotsPerChunk sizes memory chunks at about 64 MiB.
func slotsPerChunk(slot int) int { return max(1, (64<<20)/max(slot, 1)) }

// emulatedStore holds a tier in local memory; label names it (its tier
// kind's file says why it is emulated).
func emulatedStore(label string, o TierOptions) store.Store {
	return hostmem.NewMemStore(label, o.SlotBytes, slotsPerChunk(o.SlotBytes), emulatedChunk)
}

// emulatedChunk is an emulated tier's memory: anonymous mmap.
func emulatedChunk(n int) (hostmem.Chunk, error) {
	a, err := ioengine.NewArena(n)
	if err != nil {
		return hostmem.Chunk{}, err
	}
	return hostmem.Chunk{Mem: a.Bytes(), Closer: a}, nil
}

// rdmaState says what RDMA hardware there is for a remote DRAM tier.
func rdmaState(root string) string {
	devs := ProbeRDMA(root)
	if len(devs) == 0 {
		return "no RDMA device in /sys/class/infiniband"
	}
	return fmt.Sprintf("RDMA device %s present", devs[0].Name)
}

// fabricState says whether NVMe-over-Fabrics controllers exist: the
// replay writes wherever --dir is, so a real run puts it on one.
func fabricState(root string) string {
	for _, c := range ProbeNVMe(root) {
		if c.Fabric() {
			return fmt.Sprintf("an NVMe-oF controller (%s) is present: put --dir on its namespace", c.Transport)
		}
	}
	return "no NVMe-oF controller here: a local disk stands in"
}

func always(TierSpec, bool) bool { return true }

// fitsMemory refuses tiers that would hold more in this machine's memory
// than it has available (avail; 0: unknown), before any is made: a DRAM
// pool is populated whole when it opens, so too large a --block-bytes
// would otherwise push the machine into swap or the OOM killer.
func fitsMemory(tiers []TierSpec, gpu bool, avail int64) error {
	if avail <= 0 {
		return nil
	}
	var need int64
	var names []string
	for _, t := range tiers {
		if k, ok := tierKinds[t.Kind]; ok && k.hostMemory != nil && k.hostMemory(t, gpu) {
			need = satAdd(need, t.Capacity)
			names = append(names, t.Name)
		}
	}
	if need <= avail {
		return nil
	}
	return fmt.Errorf("the tiers held in this machine's memory (%s) would take up to %s at this block size, more than the %s it has available: lower --block-bytes or those tiers' capacities",
		strings.Join(names, ", "), gib(need), gib(avail))
}

// fitsDevice refuses tiers whose blocks live in GPU memory (hbm on a real
// GPU) that would take more than the device has free (free bytes on
// device name), before any is made: a Put past it fails mid-run.
func fitsDevice(tiers []TierSpec, free int64, name string) error {
	var need int64
	var names []string
	for _, t := range tiers {
		if k, ok := tierKinds[t.Kind]; ok && k.gpu && (k.hostMemory == nil || !k.hostMemory(t, true)) {
			need = satAdd(need, t.Capacity)
			names = append(names, t.Name)
		}
	}
	if need <= free {
		return nil
	}
	return fmt.Errorf("the tiers held in GPU memory (%s) would take up to %s at this block size, more than the %s free on %s: lower --block-bytes or those tiers' capacities",
		strings.Join(names, ", "), gib(need), gib(free), name)
}

func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
