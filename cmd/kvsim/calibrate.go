package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"kvsim/experiment"
	"kvsim/hw"
	"kvsim/hw/accel"
	"kvsim/hw/doctor"
	"kvsim/hwrun"
	"kvsim/results"
	"kvsim/scenario"
)

// calibrateScratch are the files the SSD measurements (hw/doctor) write
// in --dir and remove at the end.
var calibrateScratch = []string{"iobench.dat", "mixed-read.dat", "mixed-write.dat"}

// checkCalibrateScratch refuses a --dir holding a file of a scratch name
// that kvsim did not write (not iobench's fill, and not empty): it is not
// kvsim's to overwrite and remove. A killed calibrate's leftovers are fine.
func checkCalibrateScratch(dir string) error {
	for _, n := range calibrateScratch {
		p := filepath.Join(dir, n)
		if st, err := os.Lstat(p); err == nil && (!st.Mode().IsRegular() || st.Size() > 0 && !madeByIobench(p)) {
			return badInputf("calibrate: --dir %s: %s exists and was not written by kvsim; calibrate writes and removes a file of that name there: move it or give another --dir", dir, p)
		}
	}
	return nil
}

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("calibrate", "kvsim calibrate [--dir DIR] [--out FILE] [--block-bytes N] [--remote redis://HOST:PORT|rdma://HOST:PORT] [--json]", stderr)
	dir := fs.String("dir", "kvsim-calibrate", "`DIR` for the SSD test files (not tmpfs)")
	out := fs.String("out", "", "write the hardware profile TOML to `FILE` (default: DIR/profile.toml)")
	blockBytes := fs.Int("block-bytes", 64<<10, "block size to calibrate for (`N`, as replay --block-bytes)")
	count := fs.Int("count", 1024, "blocks moved per measurement (`N`)")
	asJSON := fs.Bool("json", false, "print the measurements as JSON")
	engine := fs.String("engine", "auto", "SSD I/O engine: auto, io_uring or pread")
	remote := fs.String("remote", "", "also measure moves to and from the Redis/Valkey server or kvsim serve --rdma at `ENDPOINT` (redis://HOST:PORT, valkey://HOST:PORT or rdma://HOST:PORT), for remote_dram tiers with that endpoint")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *blockBytes < 8192 || *blockBytes%4096 != 0 || *blockBytes > 1<<30 {
		return badInputf("calibrate: --block-bytes %d: must be a multiple of 4096, 8192 to 1073741824 (1 GiB)", *blockBytes)
	}
	// A median needs thousands of moves, not millions; slot ids are int32.
	if *count < 8 || *count > maxCalibrateCount {
		return badInputf("calibrate: --count %d: must be in 8..%d", *count, maxCalibrateCount)
	}
	// A measurement holds count blocks in each of two stores at once.
	if need, mem := 2*int64(*count)*int64(*blockBytes), hw.MemInfo("MemAvailable"); mem > 0 && need > mem {
		return badInputf("calibrate: --count %d x --block-bytes %d x 2 stores = %s held at once, more than the %s of memory available",
			*count, *blockBytes, scenario.FormatBytes(need), scenario.FormatBytes(mem))
	}
	if *remote != "" {
		if err := scenario.CheckEndpoint(*remote); err != nil {
			return badInputf("calibrate: --remote: %v", err)
		}
	}
	// Both paths are checked before the measuring (minutes) starts, --out
	// first: a bad one makes no --dir.
	checkOut := func() error {
		if err := checkOutFile("calibrate: --out", *out); err != nil {
			return err
		}
		var scratch []role
		for _, n := range calibrateScratch {
			scratch = append(scratch, role{"a scratch file calibrate writes and removes,", filepath.Join(*dir, n)})
		}
		if err := checkNotInput("calibrate: --out", *out, scratch); err != nil {
			return err
		}
		return experiment.CheckReplace("calibrate: --out", *out, results.IsProfile,
			"kvsim replaces only a profile calibrate wrote (its first line says so); move it or give another file")
	}
	if *out != "" {
		if err := checkOut(); err != nil {
			return err
		}
	}
	if err := experiment.PrepareDir("calibrate: --dir", *dir); err != nil {
		return err
	}
	if err := checkCalibrateScratch(*dir); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(*dir, "profile.toml")
		if err := checkOut(); err != nil {
			return err
		}
	}
	cal, err := doctor.Calibrate(ctx, *dir, *blockBytes, *count, *engine, *remote)
	var se *doctor.SetupError
	if errors.As(err, &se) {
		return badInput(se)
	}
	if err != nil {
		return err
	}
	if err := results.WriteProfile(*out, hwrun.Profile(cal)); err != nil {
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
	if cal.Remote != "" {
		fmt.Fprintf(stdout, "  remote: %s (%s)\n", cal.Remote, cal.Backends["remote_dram"])
	}
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
