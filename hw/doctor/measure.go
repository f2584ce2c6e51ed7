package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"kvsim/hw"
	"kvsim/hw/accel"
	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
)

// What `kvsim calibrate` measures: the program keeps its flags, paths and
// printing; the measuring lives here.

// Calibration is what Calibrate measured on this machine.
type Calibration struct {
	Machine    string             `json:"machine"`
	Date       string             `json:"date"`
	BlockBytes int                `json:"block_bytes"`
	Backends   map[string]string  `json:"backends"`
	Links      map[string]LinkFit `json:"links"` // "memory->memory", "memory->ssd", "ssd->memory"
	// Remote is the Redis/Valkey endpoint whose moves the links to and from
	// "remote" measured; "" when they are the emulated tier's (pinned's).
	Remote string             `json:"remote,omitempty"`
	Extra  map[string]float64 `json:"measurements"`
	GPU    string             `json:"gpu"`
	// SSDMixed is what reads and writes at once did to each other.
	SSDMixed *MixedIO           `json:"ssd_read_write_at_once,omitempty"`
	Copies   []accel.CopyResult `json:"gpu_copies,omitempty"`
}

// Link is the figures of the moves named k ("dram->remote"): measured,
// or for "remote" links not measured (no --remote), the pinned store's:
// the emulated remote tier is host memory as pinned is without a GPU.
func (c *Calibration) Link(k string) LinkFit {
	if f, ok := c.Links[k]; ok || c.Remote != "" {
		return f
	}
	return c.Links[strings.ReplaceAll(k, "remote", "pinned")]
}

// SetupError is a calibration that could not start: the folder or the
// stores it asks for cannot be had (tmpfs under O_DIRECT, a bad engine).
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return "calibrate: " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// Calibrate measures this machine's block moves between the replay's store
// kinds (count blocks of blockBytes and of a quarter of it per pair), the
// SSD path's raw throughput, reads and writes at once, pool population and,
// where a GPU runtime is found, host<->device copies. Its files live in dir
// and are removed after. With remote (redis://HOST:PORT or valkey://...),
// the moves between memory and that server are measured as "remote" (the
// remote_dram tier's store); without, the "remote" links are the
// emulated tier's, which is host memory like pinned's.
func Calibrate(ctx context.Context, dir string, blockBytes, count int, engine, remote string) (*Calibration, error) {
	host, _ := os.Hostname()
	cal := &Calibration{Machine: host, Date: time.Now().UTC().Format(time.RFC3339), BlockBytes: blockBytes,
		Backends: map[string]string{}, Links: map[string]LinkFit{}, Extra: map[string]float64{}, Remote: remote}
	specs := []hw.TierSpec{{Name: "a", Kind: "hbm"}, {Name: "b", Kind: "pinned"}, {Name: "dram", Kind: "dram"}, {Name: "ssd", Kind: "ssd"}}
	if remote != "" {
		// An RDMA server must hold the blocks of one measurement at a time.
		specs = append(specs, hw.TierSpec{Name: "remote", Kind: "remote_dram", Endpoint: remote, Lanes: 1, Capacity: 2 * int64(count) * int64(blockBytes)})
	}
	ss, err := hw.OpenStores(specs, hw.TierOptions{Dir: dir, SlotBytes: blockBytes, Hugepages: "try", HugepageSize: "2MB", Engine: engine, QueueDepth: 32})
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	defer ss.Close()
	stores := ss.List
	for i, s := range specs {
		cal.Backends[s.Kind] = stores[i].Backend()
	}
	if b := cal.Backends["remote_dram"]; remote != "" && strings.HasPrefix(b, "emulated") {
		// An rdma:// endpoint without a verbs path here: measuring local
		// memory under the remote's name would mislead.
		return nil, &SetupError{Err: fmt.Errorf("--remote %s: nothing remote to measure: %s", remote, b)}
	}
	small := blockBytes / 4
	// Store order: hbm, pinned, dram, ssd. Moves out of HBM carry blocks
	// just computed (hot); every other move carries a block nobody touched
	// for a while (cold).
	const hbm, pinned, dram, ssd, far = 0, 1, 2, 3, 4
	type pair struct {
		name string
		a, b int
		hot  bool
	}
	pairs := []pair{
		{"hbm->pinned", hbm, pinned, true}, {"pinned->hbm", pinned, hbm, false}, {"pinned->pinned", pinned, pinned, false},
		{"hbm->dram", hbm, dram, true}, {"pinned->dram", pinned, dram, false}, {"dram->hbm", dram, hbm, false},
		{"dram->pinned", dram, pinned, false}, {"dram->ssd", dram, ssd, false}, {"ssd->dram", ssd, dram, false},
	}
	if remote != "" {
		pairs = append(pairs, pair{"hbm->remote", hbm, far, true}, pair{"remote->hbm", far, hbm, false},
			pair{"pinned->remote", pinned, far, false}, pair{"remote->pinned", far, pinned, false},
			pair{"dram->remote", dram, far, false}, pair{"remote->dram", far, dram, false})
	}
	for i, p := range pairs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := MeasureMoves(stores[p.a], stores[p.b], small, blockBytes, count, int32(i*count*4), p.hot)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", p.name, err)
		}
		cal.Links[p.name] = f
	}
	if err := measureIO(ctx, cal, dir, engine); err != nil {
		return nil, err
	}
	if err := measureMixed(ctx, cal, dir, engine); err != nil {
		return nil, err
	}
	measurePopulate(cal)
	dev, probe := accel.OpenDevice()
	defer dev.Close()
	cal.GPU = dev.Name()
	if dev.Kind() == "emulated" {
		cal.GPU = "none (" + probe.Why + ")"
	} else {
		res, err := accel.MeasureCopies(dev, accel.DefaultCopySizes, 0)
		if err != nil {
			return nil, fmt.Errorf("calibrate: GPU copies: %w", err)
		}
		cal.Copies = res
		for _, r := range res {
			mib := fmt.Sprintf("%d KiB", r.Bytes>>10)
			cal.Extra["gpu D2H pinned GB/s at "+mib] = r.D2HPinnedGBs
			cal.Extra["gpu D2H pageable GB/s at "+mib] = r.D2HPageableGBs
			cal.Extra["gpu H2D pinned GB/s at "+mib] = r.H2DPinnedGBs
			cal.Extra["gpu H2D pageable GB/s at "+mib] = r.H2DPageableGBs
		}
	}
	return cal, nil
}

// measureIO records the SSD path's raw throughput: io_uring and
// pread/pwrite with O_DIRECT, at two block sizes and two queue depths.
func measureIO(ctx context.Context, cal *Calibration, dir, engine string) error {
	file := filepath.Join(dir, "iobench.dat")
	defer os.Remove(file)
	engines := []string{"io_uring", "pread"}
	if engine == "pread" {
		engines = engines[1:]
	}
	for _, rw := range []bool{true, false} { // write first: reads need the data
		for _, eng := range engines {
			for _, bs := range []int{64 << 10, 1 << 20} {
				for _, qd := range []int{1, 32} {
					if err := ctx.Err(); err != nil {
						return err
					}
					if eng == "pread" && qd > 1 {
						continue // one op at a time by construction
					}
					r, err := ioengine.IOBench(ioengine.IOBenchOptions{File: file, Size: 128 << 20, BlockSize: bs, QueueDepth: qd,
						Write: rw, Engine: eng, Direct: true, Hugepages: true})
					if err != nil {
						if eng == "io_uring" {
							cal.Extra["io_uring unavailable"] = 1
							break
						}
						return fmt.Errorf("calibrate: %s: %w", eng, err)
					}
					op := "read"
					if rw {
						op = "write"
					}
					cal.Extra[fmt.Sprintf("%s %s O_DIRECT %d KiB qd%d MiB/s", r.Engine, op, bs>>10, qd)] = r.MiBps
				}
			}
		}
	}
	return nil
}

// MixedIO compares the SSD path's reads and writes run at the same time
// with each alone: whether a scenario's ssd tier should share one pipe.
type MixedIO struct {
	Engine          string  `json:"engine"`
	ReadAloneMiBps  float64 `json:"read_alone_mibps"`
	WriteAloneMiBps float64 `json:"write_alone_mibps"`
	ReadMiBps       float64 `json:"read_mibps"`  // while writing
	WriteMiBps      float64 `json:"write_mibps"` // while reading
	TotalMiBps      float64 `json:"total_mibps"` // both byte counts over the longer run
	Shared          bool    `json:"shared"`
	Verdict         string  `json:"verdict"`
}

// SharedBelow: reads and writes together reaching less than this multiple
// of the faster one alone means they compete for one device.
const SharedBelow = 1.25

// measureMixed reads one file and writes another at the same time (1 MiB
// O_DIRECT, queue depth 32 each) and compares the total with each alone.
func measureMixed(ctx context.Context, cal *Calibration, dir, engine string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	eng := "io_uring"
	if engine == "pread" || cal.Extra["io_uring unavailable"] == 1 {
		eng = "pread"
	}
	rf, wf := filepath.Join(dir, "mixed-read.dat"), filepath.Join(dir, "mixed-write.dat")
	defer os.Remove(rf)
	defer os.Remove(wf)
	opt := func(file string, write bool) ioengine.IOBenchOptions {
		return ioengine.IOBenchOptions{File: file, Size: 128 << 20, BlockSize: 1 << 20, QueueDepth: 32, Write: write,
			Engine: eng, Direct: true, Hugepages: true}
	}
	// Alone, in the order that leaves both files full.
	w, err := ioengine.IOBench(opt(wf, true))
	if err != nil {
		return fmt.Errorf("calibrate: mixed I/O: %w", err)
	}
	if _, err := ioengine.IOBench(opt(rf, true)); err != nil {
		return fmt.Errorf("calibrate: mixed I/O: %w", err)
	}
	r, err := ioengine.IOBench(opt(rf, false))
	if err != nil {
		return fmt.Errorf("calibrate: mixed I/O: %w", err)
	}
	var rr, ww ioengine.IOBenchResult
	var rerr, werr error
	done := make(chan struct{})
	go func() { rr, rerr = ioengine.IOBench(opt(rf, false)); close(done) }()
	ww, werr = ioengine.IOBench(opt(wf, true))
	<-done
	if err := errors.Join(rerr, werr); err != nil {
		return fmt.Errorf("calibrate: mixed I/O: %w", err)
	}
	m := &MixedIO{Engine: rr.Engine, ReadAloneMiBps: r.MiBps, WriteAloneMiBps: w.MiBps, ReadMiBps: rr.MiBps, WriteMiBps: ww.MiBps}
	if s := max(rr.Seconds, ww.Seconds); s > 0 {
		m.TotalMiBps = float64(rr.Bytes+ww.Bytes) / (1 << 20) / s
	}
	m.Shared = m.TotalMiBps < SharedBelow*max(m.ReadAloneMiBps, m.WriteAloneMiBps)
	if m.Shared {
		m.Verdict = "they compete for the device; model it with shared_bandwidth = true on the ssd tier (the tier's bandwidth is then the pipe both share)"
	} else {
		m.Verdict = "they run side by side; each direction its own pipe (shared_bandwidth = false, the default)"
	}
	cal.SSDMixed = m
	return nil
}

// measurePopulate records how long a 256 MiB memfd pool takes to create and
// populate on 4 KiB pages and, where reserved, on 2 MiB hugepages.
func measurePopulate(cal *Calibration) {
	for _, mode := range []string{"off", "require"} {
		t0 := time.Now()
		p, err := hostmem.NewPool(hostmem.PoolOptions{Size: 256 << 20, Hugepages: mode, HugepageSize: "2MB", Name: "kvsim-calibrate"})
		if err != nil {
			continue // no hugepages reserved: nothing to compare
		}
		d := time.Since(t0)
		p.Close()
		cal.Extra["populate 256 MiB memfd pool ms, "+map[string]string{"off": "4 KiB pages", "require": "2 MiB hugepages"}[mode]] = float64(d.Microseconds()) / 1e3
	}
}
