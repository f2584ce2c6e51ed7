package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"kvsim/experiment"
	"kvsim/hw/ioengine"
	"kvsim/scenario"
)

// runIobench measures file I/O the way the SSD tier does it (kvsim iobench).
func runIobench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("iobench", "kvsim iobench --file F [--size 1GiB] [--bs 1MiB] [--qd 32] [--rw read|write] [--engine auto|io_uring|pread] [--direct=true] [--hugepages=true] [--json]", stderr)
	file := fs.String("file", "", "`file` to read or write (created if missing; put it on the SSD tier's filesystem)")
	size := fs.String("size", "1GiB", "bytes to move")
	bs := fs.String("bs", "1MiB", "bytes per I/O")
	qd := fs.Int("qd", ioengine.DefaultQueueDepth, "I/Os kept in flight (io_uring)")
	rw := fs.String("rw", "read", "read or write")
	engine := fs.String("engine", "auto", "auto, io_uring or pread")
	direct := fs.Bool("direct", true, "O_DIRECT (bypass the page cache)")
	huge := fs.Bool("hugepages", true, "buffers on 2 MiB pages where possible (hugetlb, else THP); false: 4 KiB pages")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInputf("iobench: unexpected argument %q", pos[0])
	}
	o := ioengine.IOBenchOptions{File: *file, QueueDepth: *qd, Engine: *engine, Direct: *direct, Hugepages: *huge}
	if o.File == "" {
		return badInputf("iobench: --file is required")
	}
	if err := checkBenchFile(o.File); err != nil {
		return err
	}
	if o.Size, err = scenario.ParseBytes(*size); err != nil {
		return badInputf("iobench: --size: %v", err)
	}
	if o.Size <= 0 {
		return badInputf("iobench: --size: must be > 0")
	}
	n, err := scenario.ParseBytes(*bs)
	if err != nil {
		return badInputf("iobench: --bs: %v", err)
	}
	if n <= 0 || n > 1<<30 {
		return badInputf("iobench: --bs: must be between 1 B and 1 GiB")
	}
	o.BlockSize = int(n)
	if *qd < 1 || *qd > ioengine.MaxQueueDepth {
		return badInputf("iobench: --qd: must be between 1 and %d", ioengine.MaxQueueDepth)
	}
	switch *rw {
	case "read":
	case "write":
		o.Write = true
	default:
		return badInputf("iobench: --rw %q: must be read or write", *rw)
	}
	switch *engine {
	case "auto", "io_uring", "pread":
	default:
		return badInputf("iobench: --engine %q: must be auto, io_uring or pread", *engine)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := ioengine.IOBench(o)
	if err != nil {
		// A tmpfs file or a misaligned --bs/--size is the user's to fix.
		if errors.Is(err, ioengine.ErrNoDirectIO) || errors.Is(err, ioengine.ErrMisaligned) {
			return badInput(err)
		}
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	regs := "unregistered buffers"
	if r.Registered {
		regs = "registered buffers"
	}
	if r.Engine != "io_uring" {
		regs = "QD1"
	}
	fmt.Fprintf(stdout, "%s %s: %.0f MiB/s, %.0f IOPS (%s in %s blocks, %.3f s)\n",
		r.RW, r.File, r.MiBps, r.IOPS, scenario.FormatBytes(r.Bytes), scenario.FormatBytes(int64(r.BlockSize)), r.Seconds)
	fmt.Fprintf(stdout, "engine %s (queue depth %d, %s), direct=%v, buffers on %s pages\n",
		r.Engine, r.QueueDepth, regs, r.Direct, r.BufferPages)
	if r.Fallback != "" {
		fmt.Fprintf(stdout, "fallback: %s\n", r.Fallback)
	}
	if r.Prepared != "" {
		fmt.Fprintf(stdout, "before timing: %s\n", r.Prepared)
	}
	return nil
}

// checkBenchFile checks --file before any I/O: an existing regular file
// (read, or overwritten in place), or a new one in an existing folder. A
// device or other special file is refused: a read benchmark first writes
// any part of the file shorter than --size.
func checkBenchFile(path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return badInputf("iobench: --file %s: is a folder; give a file in it", path)
	case err == nil && !st.Mode().IsRegular():
		return badInputf("iobench: --file %s: not a regular file (a device, pipe or socket)", path)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return badInputf("iobench: --file %s: %v", path, experiment.PathErr(err))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badInputf("iobench: --file %s: folder %s does not exist", path, dir)
	}
	return nil
}
