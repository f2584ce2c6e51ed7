//go:build linux

package ioengine

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IOBench moves o.Size bytes of o.File in o.BlockSize ops, sequentially,
// keeping o.QueueDepth ops in flight all the time (a slot is refilled as
// soon as its completion arrives), with buffers from one Arena registered
// with the ring. Writes allocate the file first (fallocate); reads of a
// file shorter than o.Size write the missing part first, untimed, so they
// read real blocks rather than holes. Like fio, no fsync is timed.
func IOBench(o IOBenchOptions) (IOBenchResult, error) {
	if err := o.defaults(); err != nil {
		return IOBenchResult{}, err
	}
	r := IOBenchResult{File: o.File, RW: "read", Direct: o.Direct, BlockSize: o.BlockSize}
	if o.Write {
		r.RW = "write"
	}
	var f *os.File
	var align Align
	_, statErr := os.Stat(o.File)
	created := os.IsNotExist(statErr)
	var err error
	defer func() {
		if err != nil && created { // leave nothing behind from a failed run
			os.Remove(o.File)
		}
	}()
	if o.Direct {
		f, align, err = OpenDirect(o.File, os.O_RDWR|os.O_CREATE, 0o644)
	} else {
		f, err = os.OpenFile(o.File, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return r, fmt.Errorf("iobench: %w", err)
	}
	defer f.Close()
	fd := int(f.Fd())

	arena, err := NewArenaPages(o.QueueDepth*o.BlockSize, o.Hugepages)
	if err != nil {
		return r, fmt.Errorf("iobench: %w", err)
	}
	defer arena.Close()
	r.BufferPages = arena.Backend()
	mem := arena.Bytes()
	for i := range mem {
		mem[i] = byte(i*7 + 1) // not zeros, in case the device compresses
	}
	// Every op starts at a multiple of the block size, and only the last
	// may be shorter: checking the first and the last covers them all.
	last := o.Size - (o.Size-1)/int64(o.BlockSize)*int64(o.BlockSize)
	for _, c := range []struct {
		off int64
		n   int
	}{{0, o.BlockSize}, {int64(o.BlockSize), o.BlockSize}, {o.Size - last, int(last)}} {
		if err = CheckAligned(mem[:c.n], c.off, align); err != nil {
			return r, fmt.Errorf("iobench: %w", err)
		}
	}

	eng, reason, err := NewEngine(o.Engine, o.QueueDepth, arena)
	if err != nil {
		return r, fmt.Errorf("iobench: %w", err)
	}
	defer eng.Close()
	r.Engine, r.Fallback = eng.Name(), reason
	r.QueueDepth = 1
	if u, ok := eng.(*uring); ok {
		r.Registered, r.QueueDepth = u.Registered(), u.QueueDepth()
	}

	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return r, fmt.Errorf("iobench: fstat %s: %w", o.File, err)
	}
	if st.Size < o.Size {
		if o.Write {
			// A new file's first write also allocates extents; allocate
			// them now, untimed, as Mooncake's bucket files are.
			if err := unix.Fallocate(fd, 0, 0, o.Size); err == nil {
				r.Prepared = fmt.Sprintf("fallocate %d bytes", o.Size)
			} else if !errors.Is(err, unix.EOPNOTSUPP) {
				return r, fmt.Errorf("iobench: fallocate %s: %w", o.File, err)
			}
		} else {
			from := st.Size / int64(o.BlockSize) * int64(o.BlockSize)
			if _, err := benchPass(eng, fd, mem, o, true, from); err != nil {
				return r, fmt.Errorf("iobench: writing %s before reading it: %w", o.File, err)
			}
			if err := unix.Fdatasync(fd); err != nil {
				return r, fmt.Errorf("iobench: fdatasync %s: %w", o.File, err)
			}
			r.Prepared = fmt.Sprintf("wrote bytes %d..%d first (the file was shorter)", from, o.Size)
		}
	}

	elapsed, err := benchPass(eng, fd, mem, o, o.Write, 0)
	if err != nil {
		return r, fmt.Errorf("iobench: %w", err)
	}
	r.Bytes = o.Size
	r.Ops = int((o.Size + int64(o.BlockSize) - 1) / int64(o.BlockSize))
	r.Seconds = elapsed.Seconds()
	if r.Seconds > 0 {
		r.MiBps = float64(r.Bytes) / (1 << 20) / r.Seconds
		r.IOPS = float64(r.Ops) / r.Seconds
	}
	return r, nil
}

// benchPass streams the range [from, o.Size) through eng, each op on a
// free buffer of mem (one per slot in flight).
func benchPass(eng Engine, fd int, mem []byte, o IOBenchOptions, write bool, from int64) (time.Duration, error) {
	bs := int64(o.BlockSize)
	n := int((o.Size - from + bs - 1) / bs)
	free := make([]int, o.QueueDepth)
	for i := range free {
		free[i] = i
	}
	base := uintptr(unsafe.Pointer(&mem[0]))
	stopped := false
	start := time.Now()
	err := Stream(eng, n,
		func(i int) Op {
			if stopped = stopped || (o.Stop != nil && o.Stop()); stopped {
				return Op{} // no buffer: completes at once, with no I/O
			}
			b := free[len(free)-1]
			free = free[:len(free)-1]
			off := from + int64(i)*bs
			ln := int(min(bs, o.Size-off))
			return Op{Write: write, FD: fd, Off: off, Buf: mem[b*o.BlockSize : b*o.BlockSize+ln]}
		},
		func(i int, op *Op) {
			if len(op.Buf) > 0 {
				free = append(free, int((uintptr(unsafe.Pointer(&op.Buf[0]))-base)/uintptr(o.BlockSize)))
			}
		})
	if err == nil && stopped {
		err = ErrStopped
	}
	return time.Since(start), err
}
