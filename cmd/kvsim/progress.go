package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"kvsim/trace"
)

// isTerminal reports whether w is a character device (a person watching).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// countLines counts newline-terminated lines fast, for progress totals.
func countLines(path string) int64 {
	f, err := trace.OpenFile(path) // a piped trace's copy, not the pipe
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err != nil {
			return n
		}
	}
}

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
}

func startProgress(w io.Writer, label string, total int64, on bool) *progress {
	p := &progress{w: w, label: label, total: total, start: time.Now(), stop: make(chan struct{}), active: on}
	if !on {
		return p
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
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
	fmt.Fprintf(p.w, "\r\033[K%s: %d/%d requests, simulated %.1f s, %.0f requests/s, ETA %s",
		p.label, done, p.total, float64(p.simNs.Load())/1e9, rate, eta)
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
		close(p.stop)
		p.wg.Wait()
	}
}
