package ioengine

import (
	"errors"
	"fmt"
)

// IOBenchOptions describes one run of IOBench: the SSD tier's I/O path on
// one file.
type IOBenchOptions struct {
	File       string
	Size       int64  // bytes to move; default 1 GiB
	BlockSize  int    // bytes per op; default 1 MiB
	QueueDepth int    // ops in flight; default DefaultQueueDepth
	Write      bool   // write instead of read
	Engine     string // "auto" (default), "io_uring" or "pread"
	Direct     bool   // O_DIRECT (the zero value is buffered I/O)
	Hugepages  bool   // buffers on 2 MiB pages where possible (false: 4 KiB pages)
	// Stop, if set, is asked before each op (an interrupt): once true no
	// more ops are issued, those in flight complete, and IOBench returns
	// ErrStopped. It must be cheap (an atomic load).
	Stop func() bool
}

// ErrStopped is IOBench's error once IOBenchOptions.Stop says so.
var ErrStopped = errors.New("iobench: stopped")

// IOBenchResult is what IOBench measured.
type IOBenchResult struct {
	File        string  `json:"file"`
	RW          string  `json:"rw"`
	Engine      string  `json:"engine"`
	Fallback    string  `json:"fallback,omitempty"`
	Registered  bool    `json:"registered_buffers"`
	Direct      bool    `json:"direct"`
	BufferPages string  `json:"buffer_pages"` // the Arena's backend
	QueueDepth  int     `json:"queue_depth"`  // ops actually in flight at most
	BlockSize   int     `json:"block_size"`
	Bytes       int64   `json:"bytes"`
	Ops         int     `json:"ops"`
	Seconds     float64 `json:"seconds"`
	MiBps       float64 `json:"mib_per_s"`
	IOPS        float64 `json:"iops"`
	Prepared    string  `json:"prepared,omitempty"` // what was done to the file first
}

func (o *IOBenchOptions) defaults() error {
	if o.File == "" {
		return errors.New("iobench: no file given")
	}
	if o.Size == 0 {
		o.Size = 1 << 30
	}
	if o.BlockSize == 0 {
		o.BlockSize = 1 << 20
	}
	if o.QueueDepth == 0 {
		o.QueueDepth = DefaultQueueDepth
	}
	if o.Engine == "" {
		o.Engine = "auto"
	}
	switch {
	case o.Size < 0:
		return fmt.Errorf("iobench: size %d: must be > 0", o.Size)
	case o.BlockSize < 0 || o.BlockSize > maxRW:
		return fmt.Errorf("iobench: block size %d: must be between 1 and %d", o.BlockSize, maxRW)
	case o.QueueDepth < 0 || o.QueueDepth > MaxQueueDepth:
		return fmt.Errorf("iobench: queue depth %d: must be between 1 and %d", o.QueueDepth, MaxQueueDepth)
	}
	return nil
}
