package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgress: the status line counts requests, shows simulated time,
// rate and ETA, and is cleared at the end; off, it writes nothing.
func TestProgress(t *testing.T) {
	var w lockedBuffer
	p := startProgress(&w, "quickstart", 100, true)
	for i := range 40 {
		p.Add(int64(i) * 1e9)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(w.String(), "ETA") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // the line is redrawn every 250 ms
	}
	p.finish()
	out := w.String()
	for _, want := range []string{"quickstart: 40/100 requests", "simulated 39.0 s", "requests/s", "ETA"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress %q lacks %q", out, want)
		}
	}
	if !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("the line is not cleared at the end: %q", out)
	}
	var quiet lockedBuffer
	q := startProgress(&quiet, "x", 10, false)
	q.Add(1)
	q.finish()
	if quiet.String() != "" || isTerminal(&quiet) {
		t.Errorf("inactive progress wrote %q", quiet.String())
	}
}
