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
	"strings"
	"syscall"

	"kvsim/experiment"
	"kvsim/hw"
	"kvsim/hw/ioengine"
	"kvsim/scenario"
)

// runIobench measures file I/O the way the SSD tier does it (kvsim iobench).
func runIobench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("iobench", "kvsim iobench --file F [--size 1GiB] [--bs 1MiB] [--qd 32] [--rw read|write] [--engine auto|io_uring|pread] [--direct=true] [--hugepages=true] [--overwrite] [--json]", stderr)
	file := fs.String("file", "", "`file` to read or write (created if missing; put it on the SSD tier's filesystem)")
	overwrite := fs.Bool("overwrite", false, "let a write (or a read of a file shorter than --size) change an existing file iobench did not make; its contents are lost")
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
	if err := checkBenchPath(o.File); err != nil {
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
	// The buffers are touched (filled) at once: more than the machine's
	// memory would be swapped or killed, not measured.
	if buf, mem := int64(*qd)*n, hw.MemInfo("MemTotal"); mem > 0 && buf > mem {
		return badInputf("iobench: --qd %d x --bs %s = %s of I/O buffers, more than this machine's %s of memory",
			*qd, *bs, scenario.FormatBytes(buf), scenario.FormatBytes(mem))
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
	created, err := checkBenchFile(o.File, o.Size, o.Write, *overwrite)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	o.Stop = func() bool { return ctx.Err() != nil }
	r, err := ioengine.IOBench(o)
	if err != nil {
		if created { // leave nothing behind from a failed or interrupted run
			os.Remove(o.File)
		}
		if errors.Is(err, ioengine.ErrStopped) && ctx.Err() != nil {
			return ctx.Err()
		}
		// A tmpfs file or a misaligned --bs/--size is the user's to fix;
		// so are buffers or a file larger than this machine can give.
		switch {
		case errors.Is(err, ioengine.ErrNoDirectIO) || errors.Is(err, ioengine.ErrMisaligned):
			return badInput(err)
		case errors.Is(err, syscall.ENOMEM):
			return badInputf("iobench: --qd %d x --bs %s = %s of I/O buffers: %s", o.QueueDepth, *bs,
				scenario.FormatBytes(int64(o.QueueDepth)*int64(o.BlockSize)), strings.TrimPrefix(err.Error(), "iobench: "))
		case errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.ENOSPC):
			return badInputf("iobench: --size %s: %s", *size, strings.TrimPrefix(err.Error(), "iobench: "))
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

// checkBenchPath checks --file before any I/O: an existing regular file,
// or a new one in an existing folder. A device or other special file is
// refused: a read benchmark first writes any part of the file shorter than
// --size.
func checkBenchPath(path string) error {
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

// checkBenchFile says whether iobench will create --file, and refuses to
// change an existing file iobench did not make (kvsim never overwrites
// what it did not create): a write benchmark overwrites the file, and a
// read benchmark first writes whatever the file lacks of size. An empty
// file, or one only read, is fine; overwrite lets the change happen.
func checkBenchFile(path string, size int64, write, overwrite bool) (created bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, badInputf("iobench: --file %s: %v", path, experiment.PathErr(err))
	}
	if st.Size() == 0 || (!write && st.Size() >= size) || overwrite || madeByIobench(path) {
		return false, nil
	}
	what := "--rw write would overwrite it"
	if !write {
		what = fmt.Sprintf("reading --size %s of it would first write the rest", scenario.FormatBytes(size))
	}
	return false, badInputf("iobench: --file %s: exists (%s) and was not written by iobench; %s (give a new file, or --overwrite)",
		path, scenario.FormatBytes(st.Size()), what)
}

// madeByIobench reports whether the file at path starts as iobench's
// writes do: each block is a slice of its buffers, filled with
// byte(i*7 + 1), so byte follows byte by +7 (mod 256) across the first
// 256 bytes (within one block, or across blocks of a multiple of 256
// bytes). 64 bytes of that are never a user's data.
func madeByIobench(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [256]byte
	n, _ := io.ReadFull(f, b[:])
	if n < 64 {
		return false
	}
	for i := 1; i < n; i++ {
		if b[i]-b[i-1] != 7 {
			return false
		}
	}
	return true
}
