package events

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"kvsim/internal/testenv"
)

func TestEventsBlockHashIsABijection(t *testing.T) {
	seen := map[uint64]bool{}
	for b := int64(0); b < 100000; b++ {
		h := BlockHash(b)
		if seen[h] {
			t.Fatalf("BlockHash(%d) collides", b)
		}
		seen[h] = true
	}
	if BlockHash(0) != 0xe220a8397b1dcdaf {
		t.Errorf("BlockHash(0) = %#x: the documented mapping changed", BlockHash(0))
	}
}

// A subscriber that connects and never reads (libzmq stops reading the
// socket once its small queue is full) stalls neither the simulation nor
// the publisher, paced or not: once a write to it has been blocked for
// StallAfter, frames are withheld and counted, so every batch is either
// handed to the sockets or counted as dropped. Without the count the loop
// below would never see a drop and fail at the test's deadline.
func TestEventsStalledSubscriber(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import zmq").Run(); err != nil {
		testenv.Missing(t, "/usr/bin/python3 cannot import zmq (apt-get install python3-zmq): %v", err)
	}
	for _, pace := range []float64{0, 1e9} {
		t.Run(fmt.Sprint("pace=", pace), func(t *testing.T) { stalledSubscriber(t, pace) })
	}
}

func stalledSubscriber(t *testing.T, pace float64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p, err := NewPublisher(PublishOptions{Endpoint: fmt.Sprintf("tcp://127.0.0.1:%d", port-1), Instances: 1, Media: []string{"GPU"},
		BlockTokens: 16, Pace: pace, StallAfter: 20 * time.Millisecond})
	if err != nil {
		t.Skipf("ports taken: %v", err)
	}
	defer p.Close()
	sub := exec.Command("/usr/bin/python3", "-c", fmt.Sprintf(`
import sys, zmq
c = zmq.Context(); s = c.socket(zmq.SUB)
s.setsockopt(zmq.RCVHWM, 1); s.setsockopt(zmq.RCVBUF, 4096)
s.setsockopt(zmq.SUBSCRIBE, b""); s.connect("tcp://127.0.0.1:%d")
s.recv()
print("GOT", flush=True)
sys.stdin.read()
`, port-1))
	in, _ := sub.StdinPipe()
	out, _ := sub.StdoutPipe()
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); sub.Process.Kill(); sub.Wait() }()
	// Publish until the subscriber has one frame: it is connected and
	// subscribed, and from then on reads nothing.
	got := make(chan bool)
	go func() { bufio.NewReader(out).ReadString('\n'); close(got) }()
	b := int64(0)
	deadline := testenv.Deadline(t)
	for ; ; b++ {
		p.Observe(0, b, b, 1)
		if b%64 == 0 {
			select {
			case <-got:
				goto stalled
			default:
				time.Sleep(time.Millisecond)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscriber never received a frame")
		}
	}
stalled:
	// More batches until the socket buffers are full and a frame is
	// withheld.
	for p.stalled.Load() == 0 {
		for range 256 {
			p.Observe(0, b, b, 1)
			b++
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frame withheld after %d batches to a subscriber that does not read", p.Batches(0))
		}
	}
	for end := b + 10000; b < end; b++ {
		p.Observe(0, b, b, 1)
	}
	s, err := p.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if s.Frames+s.Dropped+s.Stalled != int64(p.Batches(0)) || s.Stalled == 0 {
		t.Errorf("%d batches published, %d handed to the sockets, %d dropped by pacing, %d withheld: want the three to add up, some withheld",
			p.Batches(0), s.Frames, s.Dropped, s.Stalled)
	}
}
