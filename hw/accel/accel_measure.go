package accel

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"kvsim/hw/hostmem"
)

// CopyResult is the copy bandwidth at one size, in GB/s (1e9 bytes/s),
// for page-locked and pageable host memory.
type CopyResult struct {
	Bytes          int     `json:"bytes"`
	Iters          int     `json:"iters"`
	H2DPinnedGBs   float64 `json:"h2d_pinned_gbs"`
	H2DPageableGBs float64 `json:"h2d_pageable_gbs"`
	D2HPinnedGBs   float64 `json:"d2h_pinned_gbs"`
	D2HPageableGBs float64 `json:"d2h_pageable_gbs"`
	H2DRatio       float64 `json:"h2d_pinned_over_pageable"`
	D2HRatio       float64 `json:"d2h_pinned_over_pageable"`
}

// DefaultCopySizes are the sizes MeasureCopies is usually run at: a small
// KV block, typical blocks, and a size that reaches the link's peak.
var DefaultCopySizes = []int{64 << 10, 1 << 20, 16 << 20, 256 << 20}

// copyIters moves about 1 GiB per measurement, 3 to 200 copies.
func copyIters(size int) int { return min(200, max(3, (1<<30)/max(size, 1))) }

// MeasureCopies times host-to-device and device-to-host copies of each size
// from page-locked (HostAlloc) and pageable (mmap) memory: iters copies
// back to back on one stream between two events, after one warm-up copy.
// iters <= 0 picks a count per size. On the emulated device the events
// are wall-clock readings around memmoves.
func MeasureCopies(dev Device, sizes []int, iters int) (res []CopyResult, err error) {
	if len(sizes) == 0 {
		sizes = DefaultCopySizes
	}
	top := 0
	for _, s := range sizes {
		if s <= 0 {
			return nil, fmt.Errorf("measure copies: size %d: must be > 0", s)
		}
		top = max(top, s)
	}
	var cleanup []func() error
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanup[i]())
		}
	}()
	dptr, err := dev.Malloc(top)
	if err != nil {
		return nil, fmt.Errorf("measure copies: %w", err)
	}
	cleanup = append(cleanup, func() error { return dev.Free(dptr) })
	pinned, err := dev.HostAlloc(top)
	if err != nil {
		return nil, fmt.Errorf("measure copies: pinned host buffer: %w", err)
	}
	cleanup = append(cleanup, func() error { return dev.HostFree(pinned) })
	pageable, err := accelHostAlloc(top)
	if err != nil {
		return nil, fmt.Errorf("measure copies: pageable host buffer: %w", err)
	}
	cleanup = append(cleanup, func() error { return accelHostFree(pageable) })
	for i := range pinned {
		pinned[i], pageable[i] = byte(i), byte(i>>8)
	}
	st, err := dev.NewStream()
	if err != nil {
		return nil, fmt.Errorf("measure copies: %w", err)
	}
	cleanup = append(cleanup, func() error { return dev.DestroyStream(st) })
	var ev [2]AccelEvent
	for i := range ev {
		if ev[i], err = dev.NewEvent(); err != nil {
			return nil, fmt.Errorf("measure copies: %w", err)
		}
		e := ev[i]
		cleanup = append(cleanup, func() error { return dev.DestroyEvent(e) })
	}
	timeIt := func(size, n int, h2d bool, host []byte) (float64, error) {
		host = host[:size]
		one := func() error {
			if h2d {
				return dev.CopyH2D(dptr, host, st)
			}
			return dev.CopyD2H(host, dptr, st)
		}
		if err := one(); err != nil { // warm-up: first-touch and lazy setup
			return 0, err
		}
		if err := dev.StreamSync(st); err != nil {
			return 0, err
		}
		if err := dev.Record(ev[0], st); err != nil {
			return 0, err
		}
		for range n {
			if err := one(); err != nil {
				return 0, err
			}
		}
		if err := dev.Record(ev[1], st); err != nil {
			return 0, err
		}
		if err := dev.EventSync(ev[1]); err != nil {
			return 0, err
		}
		d, err := dev.Elapsed(ev[0], ev[1])
		if err != nil {
			return 0, err
		}
		return gbps(int64(size)*int64(n), d), nil
	}
	for _, size := range sizes {
		n := iters
		if n <= 0 {
			n = copyIters(size)
		}
		r := CopyResult{Bytes: size, Iters: n}
		for _, m := range []struct {
			out  *float64
			h2d  bool
			host []byte
			what string
		}{
			{&r.H2DPinnedGBs, true, pinned, "H2D pinned"},
			{&r.H2DPageableGBs, true, pageable, "H2D pageable"},
			{&r.D2HPinnedGBs, false, pinned, "D2H pinned"},
			{&r.D2HPageableGBs, false, pageable, "D2H pageable"},
		} {
			if *m.out, err = timeIt(size, n, m.h2d, m.host); err != nil {
				return res, fmt.Errorf("measure copies: %s %s: %w", m.what, hostmem.FormatBytes(int64(size)), err)
			}
		}
		r.H2DRatio, r.D2HRatio = ratio(r.H2DPinnedGBs, r.H2DPageableGBs), ratio(r.D2HPinnedGBs, r.D2HPageableGBs)
		res = append(res, r)
	}
	return res, nil
}

func gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		d = time.Nanosecond // a copy too quick for the timer: report a bound
	}
	return float64(bytes) / d.Seconds() / 1e9
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// FormatCopyResults renders results as an aligned table.
func FormatCopyResults(res []CopyResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%10s %6s  %12s %12s %7s  %12s %12s %7s\n", "size", "iters",
		"H2D pinned", "H2D pageable", "ratio", "D2H pinned", "D2H pageable", "ratio")
	for _, r := range res {
		fmt.Fprintf(&b, "%10s %6d  %9.2f GB/s %9.2f GB/s %6.2fx  %9.2f GB/s %9.2f GB/s %6.2fx\n",
			hostmem.FormatBytes(int64(r.Bytes)), r.Iters, r.H2DPinnedGBs, r.H2DPageableGBs, r.H2DRatio,
			r.D2HPinnedGBs, r.D2HPageableGBs, r.D2HRatio)
	}
	return b.String()
}
