package doctor

import (
	"fmt"
	"sort"
	"time"

	"kvsim/hw"
	"kvsim/hw/payload"
	"kvsim/hw/store"
)

// LinkFit is a measured link: a transfer of n bytes takes Latency + n/Bandwidth.
type LinkFit struct {
	Bandwidth float64 // bytes/s
	Latency   int64   // ns
	// The medians the fit came from.
	SmallBytes, LargeBytes int
	SmallNs, LargeNs       int64
}

// MeasureMoves times moves of blocks of two sizes from store a to store b
// through a Body, exactly as a replay moves them, and fits latency and
// bandwidth to the medians. Blocks ids start at base and are deleted after.
// hot moves each block right after writing it (a block leaving HBM was
// just computed, so it is in the CPU caches of an emulated tier); cold
// writes them all first (a block promoted or demoted from a lower tier has
// not been touched for a while).
func MeasureMoves(a, b store.Store, small, large, count int, base int32, hot bool) (LinkFit, error) {
	if small <= 0 || large <= small || count <= 0 {
		return LinkFit{}, fmt.Errorf("calibrate: bad sizes %d, %d", small, large)
	}
	body, err := hw.NewBody(hw.BodyOptions{Stores: []store.Store{a, b}, RealBytes: func(n int64) int { return int(n) }, MaxBytes: large})
	if err != nil {
		return LinkFit{}, err
	}
	defer body.Close()
	median := func(n int) (int64, error) {
		buf := make([]byte, n)
		var ts []int64
		for i := 0; i < count && !hot; i++ {
			id := base + int32(i)
			payload.Fill(buf, id)
			if err := a.Put(id, buf); err != nil {
				return 0, err
			}
		}
		// Reads come from the medium, not a write buffer.
		if f, ok := a.(store.Flusher); ok {
			if err := f.Flush(); err != nil {
				return 0, err
			}
		}
		for i := 0; i < count; i++ {
			id := base + int32(i)
			if hot {
				payload.Fill(buf, id)
				if err := a.Put(id, buf); err != nil {
					return 0, err
				}
			}
			t0 := time.Now()
			body.Move(0, -1, id, int64(n), 0, 1, 0)
			ts = append(ts, time.Since(t0).Nanoseconds())
			if lost := body.TakeLost(); len(lost) > 0 {
				return 0, lost[0].Err
			}
		}
		for i := 0; i < count; i++ {
			a.Delete(base + int32(i))
			b.Delete(base + int32(i))
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		return ts[len(ts)/2], nil
	}
	ts, err := median(small)
	if err != nil {
		return LinkFit{}, err
	}
	tl, err := median(large)
	if err != nil {
		return LinkFit{}, err
	}
	return fitLink(small, large, ts, tl), nil
}

// fitLink fits latency + n/bandwidth through the medians ts (small bytes)
// and tl (large bytes).
func fitLink(small, large int, ts, tl int64) LinkFit {
	f := LinkFit{SmallBytes: small, LargeBytes: large, SmallNs: ts, LargeNs: tl}
	if tl > ts {
		f.Bandwidth = float64(large-small) / float64(tl-ts) * 1e9
		f.Latency = ts - int64(float64(small)/f.Bandwidth*1e9)
	}
	if f.Bandwidth <= 0 || f.Latency < 1 { // noise: fall back to pure bandwidth
		// 1 ns, not 0: the simulator reads a reverse latency of 0 as "the
		// forward one", and a profile writes this fit as either.
		f.Latency = 1
		f.Bandwidth = float64(large) / float64(max(tl, 1)) * 1e9
	}
	return f
}
