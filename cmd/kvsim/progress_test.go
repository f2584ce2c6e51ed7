package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"kvsim/internal/testenv"
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
	for deadline := testenv.Deadline(t); !strings.Contains(w.String(), "ETA") && time.Now().Before(deadline); {
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

// asTerminal makes stderr count as a terminal for the test's duration.
func asTerminal(t *testing.T) {
	old := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = old })
}

// TestReplayProgress: on a terminal, replay --real shows the requests
// done out of the trace's, the time elapsed (not simulated), the rate and
// the ETA, and clears the line before the summary; --quiet prints nothing,
// neither the line nor the summary.
func TestReplayProgress(t *testing.T) {
	asTerminal(t)
	every := progressEvery
	progressEvery = 5 * time.Millisecond // a line however fast this machine replays
	t.Cleanup(func() { progressEvery = every })
	args := []string{"replay", "--real", "--mirror", "--dir", replayDir(t), "--fresh", "--block-bytes", "16384",
		"--scenario", "../../scenarios/hbm_dram_ssd.toml", "--limit", "300", "../../traces/synthetic.jsonl"}
	var stdout bytes.Buffer
	var stderr lockedBuffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stderr.String()
	for _, want := range []string{"replay: ", "/300 requests, ", "s elapsed, ", "requests/s, ETA "} {
		if !strings.Contains(out, want) {
			t.Errorf("progress %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "simulated") || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("progress %q: simulated time shown, or the line not cleared", out)
	}
	if !strings.Contains(stdout.String(), "wrote ") {
		t.Errorf("no summary: %q", stdout.String())
	}

	stdout.Reset()
	var quiet lockedBuffer
	if err := run(context.Background(), append([]string{args[0], "--quiet"}, args[1:]...), &stdout, &quiet); err != nil {
		t.Fatal(err)
	}
	if quiet.String() != "" || stdout.String() != "" {
		t.Errorf("--quiet printed %q on stdout, %q on stderr", stdout.String(), quiet.String())
	}
}
