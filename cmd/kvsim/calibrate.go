package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"kvsim/experiment"
	"kvsim/hw"
	"kvsim/hw/accel"
	"kvsim/hw/doctor"
	"kvsim/hw/hostmem"
	"kvsim/hw/ioengine"
	"kvsim/results"
	"kvsim/scenario"
)

// calibration is what `kvsim calibrate` measured.
type calibration struct {
	Machine    string                    `json:"machine"`
	Date       string                    `json:"date"`
	BlockBytes int                       `json:"block_bytes"`
	Backends   map[string]string         `json:"backends"`
	Links      map[string]doctor.LinkFit `json:"links"` // "memory->memory", "memory->ssd", "ssd->memory"
	Extra      map[string]float64        `json:"measurements"`
	GPU        string                    `json:"gpu"`
	// SSDMixed is what reads and writes at once did to each other.
	SSDMixed *mixedIO           `json:"ssd_read_write_at_once,omitempty"`
	Copies   []accel.CopyResult `json:"gpu_copies,omitempty"`
}

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("calibrate", "kvsim calibrate [--dir DIR] [--out FILE] [--block-bytes N] [--json]", stderr)
	dir := fs.String("dir", "kvsim-calibrate", "`DIR` for the SSD test files (not tmpfs)")
	out := fs.String("out", "", "write the hardware profile TOML to `FILE` (default: DIR/profile.toml)")
	blockBytes := fs.Int("block-bytes", 64<<10, "block size to calibrate for (`N`, as replay --block-bytes)")
	count := fs.Int("count", 1024, "blocks moved per measurement (`N`)")
	asJSON := fs.Bool("json", false, "print the measurements as JSON")
	engine := fs.String("engine", "auto", "SSD I/O engine: auto, io_uring or pread")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *blockBytes < 8192 || *blockBytes%4096 != 0 {
		return badInputf("calibrate: --block-bytes %d: must be a multiple of 4096, at least 8192", *blockBytes)
	}
	if *count < 8 {
		return badInputf("calibrate: --count must be >= 8")
	}
	// Both paths are checked before the measuring (minutes) starts, --out
	// first: a bad one makes no --dir.
	if *out != "" {
		if err := checkOutFile("calibrate: --out", *out); err != nil {
			return err
		}
	}
	if err := prepareOutDir("calibrate: --dir", *dir); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(*dir, "profile.toml")
		if err := checkOutFile("calibrate: --out", *out); err != nil {
			return err
		}
	}
	cal, err := calibrate(ctx, *dir, *blockBytes, *count, *engine)
	if err != nil {
		return err
	}
	if err := results.WriteProfile(*out, profile(cal)); err != nil {
		return fmt.Errorf("calibrate: write %s: %w", *out, experiment.PathErr(err))
	}
	if *asJSON {
		b, err := results.MarshalJSON(cal)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	fmt.Fprintf(stdout, "calibrated %s for %d-byte blocks (GPU: %s):\n", cal.Machine, cal.BlockBytes, cal.GPU)
	for _, k := range sortedKeys(cal.Links) {
		l := cal.Links[k]
		fmt.Fprintf(stdout, "  %-20s %8.2f GB/s  latency %7.1f us   (median %.1f us at %d B)\n", k, l.Bandwidth/1e9, float64(l.Latency)/1e3, float64(l.LargeNs)/1e3, l.LargeBytes)
	}
	for _, k := range sortedKeys(cal.Extra) {
		fmt.Fprintf(stdout, "  %-46s %9.1f\n", k, cal.Extra[k])
	}
	if m := cal.SSDMixed; m != nil {
		fmt.Fprintf(stdout, "  ssd reads and writes at once: %.0f MiB/s in all (alone: read %.0f, write %.0f): %s\n", m.TotalMiBps, m.ReadAloneMiBps, m.WriteAloneMiBps, m.Verdict)
	}
	if len(cal.Copies) > 0 {
		fmt.Fprint(stdout, accel.FormatCopyResults(cal.Copies))
	}
	fmt.Fprintf(stdout, "wrote %s; use it with: profile = %q in a scenario, or kvsim replay --profile %s\n", *out, *out, *out)
	return nil
}

func calibrate(ctx context.Context, dir string, blockBytes, count int, engine string) (*calibration, error) {
	host, _ := os.Hostname()
	cal := &calibration{Machine: host, Date: time.Now().UTC().Format(time.RFC3339), BlockBytes: blockBytes,
		Backends: map[string]string{}, Links: map[string]doctor.LinkFit{}, Extra: map[string]float64{}}
	specs := []hw.TierSpec{{Name: "a", Kind: "hbm"}, {Name: "b", Kind: "pinned"}, {Name: "dram", Kind: "dram"}, {Name: "ssd", Kind: "ssd"}}
	ss, err := hw.OpenStores(specs, hw.TierOptions{Dir: dir, SlotBytes: blockBytes, Hugepages: "try", HugepageSize: "2MB", Engine: engine, QueueDepth: 32})
	if err != nil {
		return nil, badInputf("calibrate: %v", err)
	}
	defer ss.Close()
	stores, notes := ss.List, ss.Notes
	for i, s := range specs {
		cal.Backends[s.Kind] = stores[i].Backend()
	}
	_ = notes
	small := blockBytes / 4
	// Store order: hbm, pinned, dram, ssd. Moves out of HBM carry blocks
	// just computed (hot); every other move carries a block nobody touched
	// for a while (cold).
	const hbm, pinned, dram, ssd = 0, 1, 2, 3
	for i, p := range []struct {
		name string
		a, b int
		hot  bool
	}{
		{"hbm->pinned", hbm, pinned, true}, {"pinned->hbm", pinned, hbm, false}, {"pinned->pinned", pinned, pinned, false},
		{"hbm->dram", hbm, dram, true}, {"pinned->dram", pinned, dram, false}, {"dram->hbm", dram, hbm, false},
		{"dram->pinned", dram, pinned, false}, {"dram->ssd", dram, ssd, false}, {"ssd->dram", ssd, dram, false},
	} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := doctor.MeasureMoves(stores[p.a], stores[p.b], small, blockBytes, count, int32(i*count*4), p.hot)
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

// profile is the hardware profile of c, in the form scenario.LoadProfile
// reads: every pair of tier kinds the replay's stores implement the same
// way gets the figures measured for that path.
func profile(c *calibration) *results.Profile {
	p := &results.Profile{BlockBytes: c.BlockBytes, Machine: c.Machine, Date: c.Date,
		Notes: "backends: " + fmt.Sprint(c.Backends), Measurements: c.Extra}
	link := func(from, to string, fwd, rev doctor.LinkFit) {
		p.Links = append(p.Links, results.ProfileLink{From: from, To: to, Bandwidth: bps(fwd.Bandwidth), ReverseBandwidth: bps(rev.Bandwidth),
			Latency: scenario.FormatDuration(fwd.Latency), ReverseLatency: scenario.FormatDuration(rev.Latency)})
	}
	// Each pair of kinds gets the path the replay's stores use for it;
	// remote DRAM is emulated in host memory like the pinned tier.
	L := c.Links
	link("hbm", "pinned", L["hbm->pinned"], L["pinned->hbm"])
	link("hbm", "remote_dram", L["hbm->pinned"], L["pinned->hbm"])
	link("pinned", "remote_dram", L["pinned->pinned"], L["pinned->pinned"])
	link("hbm", "dram", L["hbm->dram"], L["dram->hbm"])
	link("pinned", "dram", L["pinned->dram"], L["dram->pinned"])
	link("remote_dram", "dram", L["pinned->dram"], L["dram->pinned"])
	for _, a := range []string{"hbm", "pinned", "dram", "remote_dram"} {
		for _, d := range []string{"ssd", "nvmeof"} {
			link(a, d, L["dram->ssd"], L["ssd->dram"])
		}
	}
	return p
}

func bps(v float64) string { return fmt.Sprintf("%.6gMB/s", v/1e6) }

// measureIO records the SSD path's raw throughput: io_uring and
// pread/pwrite with O_DIRECT, at two block sizes and two queue depths.
func measureIO(ctx context.Context, cal *calibration, dir, engine string) error {
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

// mixedIO compares the SSD path's reads and writes run at the same time
// with each alone: whether a scenario's ssd tier should share one pipe.
type mixedIO struct {
	Engine          string  `json:"engine"`
	ReadAloneMiBps  float64 `json:"read_alone_mibps"`
	WriteAloneMiBps float64 `json:"write_alone_mibps"`
	ReadMiBps       float64 `json:"read_mibps"`  // while writing
	WriteMiBps      float64 `json:"write_mibps"` // while reading
	TotalMiBps      float64 `json:"total_mibps"` // both byte counts over the longer run
	Shared          bool    `json:"shared"`
	Verdict         string  `json:"verdict"`
}

// sharedBelow: reads and writes together reaching less than this multiple
// of the faster one alone means they compete for one device.
const sharedBelow = 1.25

// measureMixed reads one file and writes another at the same time (1 MiB
// O_DIRECT, queue depth 32 each) and compares the total with each alone.
func measureMixed(ctx context.Context, cal *calibration, dir, engine string) error {
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
	m := &mixedIO{Engine: rr.Engine, ReadAloneMiBps: r.MiBps, WriteAloneMiBps: w.MiBps, ReadMiBps: rr.MiBps, WriteMiBps: ww.MiBps}
	if s := max(rr.Seconds, ww.Seconds); s > 0 {
		m.TotalMiBps = float64(rr.Bytes+ww.Bytes) / (1 << 20) / s
	}
	m.Shared = m.TotalMiBps < sharedBelow*max(m.ReadAloneMiBps, m.WriteAloneMiBps)
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
func measurePopulate(cal *calibration) {
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
