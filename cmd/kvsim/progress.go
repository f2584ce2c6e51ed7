package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"kvsim/trace"
)

// isTerminal reports whether w is a character device (a person watching);
// a variable so that tests can stand in for a terminal.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// countLines counts newline-terminated lines fast, for progress totals;
// 0 (unknown) for what is not a regular file, which a count would drain
// or never finish (a pipe, a device), and once ctx is cancelled.
func countLines(ctx context.Context, path string) int64 {
	path = trace.Resolve(path) // a piped trace's spooled copy
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return 0 // before opening: opening a named pipe waits for a writer
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		if ctx.Err() != nil {
			return 0
		}
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err != nil {
			return n
		}
	}
}

// progressEvery is how often the progress line is redrawn (tests shorten it).
var progressEvery = 250 * time.Millisecond

// progress prints one self-overwriting status line while policies run.
type progress struct {
	w      io.Writer
	label  string
	total  int64 // requests over all policies
	done   atomic.Int64
	simNs  atomic.Int64
	start  time.Time
	stop   chan struct{}
	wg     sync.WaitGroup
	active bool
	wall   bool // show the time elapsed, not the simulated time (replay)
}

func startProgress(w io.Writer, label string, total int64, on bool) *progress {
	return newProgress(w, label, total, on, false)
}

// startWallProgress is startProgress for work on the real clock: the line
// shows the time elapsed instead of the simulated time.
func startWallProgress(w io.Writer, label string, total int64, on bool) *progress {
	return newProgress(w, label, total, on, true)
}

func newProgress(w io.Writer, label string, total int64, on, wall bool) *progress {
	p := &progress{w: w, label: label, total: total, start: time.Now(), stop: make(chan struct{}), active: on, wall: wall}
	if !on {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				fmt.Fprintf(p.w, "\r\033[K")
				return
			case <-t.C:
				p.print()
			}
		}
	}()
	return p
}

func (p *progress) print() {
	done := p.done.Load()
	el := time.Since(p.start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	eta := "?"
	if p.total > 0 && rate > 0 {
		eta = (time.Duration(float64(max(p.total-done, 0))/rate) * time.Second).Round(time.Second).String()
	}
	clock := fmt.Sprintf("simulated %.1f s", float64(p.simNs.Load())/1e9)
	if p.wall {
		clock = fmt.Sprintf("%s elapsed", time.Duration(el*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintf(p.w, "\r\033[K%s: %d/%d requests, %s, %.0f requests/s, ETA %s",
		p.label, done, p.total, clock, rate, eta)
}

// Add records one replayed request at virtual time t.
func (p *progress) Add(t int64) {
	if !p.active {
		return
	}
	p.done.Add(1)
	for {
		cur := p.simNs.Load()
		if t <= cur || p.simNs.CompareAndSwap(cur, t) {
			return
		}
	}
}

func (p *progress) finish() {
	if p.active {
		p.active = false // idempotent: a replay may finish it early to print
		close(p.stop)
		p.wg.Wait()
	}
}
