package events

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// zmq4's PUB socket never blocks its caller and never says what it drops:
// Send queues a frame for one goroutine that writes it to each subscriber
// in turn, and past the high-water mark it drops the frame silently. A
// subscriber that stops reading blocks that goroutine once its TCP buffers
// fill. So the publisher listens through a TCP transport of its own that
// tells how long a write to a subscriber has been blocked, and withholds
// (and counts) frames while one is: the library's queue stays short and
// what a subscriber misses is counted, not lost unseen.

// watchScheme names the transport in an endpoint.
const watchScheme = "kvsimwatchtcp"

var (
	watchOnce sync.Once
	watchMu   sync.Mutex
	watches   = map[string]*watch{} // listen address -> its connections
)

func registerWatch() {
	watchOnce.Do(func() {
		if err := zmq4.RegisterTransport(watchScheme, watchTransport{}); err != nil {
			panic(err) // only a second registration fails, and Once prevents it
		}
	})
}

// watch is one listening socket's accepted connections.
type watch struct {
	mu    sync.Mutex
	conns map[*watchedConn]struct{}
}

// blocked is how long the longest write now in progress has waited.
func (w *watch) blocked(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var d time.Duration
	for c := range w.conns {
		if s := c.since.Load(); s != 0 {
			d = max(d, now.Sub(time.Unix(0, s)))
		}
	}
	return d
}

func watchFor(addr string) *watch {
	watchMu.Lock()
	defer watchMu.Unlock()
	return watches[addr]
}

type watchTransport struct{}

func (watchTransport) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	return d.DialContext(ctx, "tcp", addr)
}

func (watchTransport) Listen(_ context.Context, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	w := &watch{conns: map[*watchedConn]struct{}{}}
	watchMu.Lock()
	watches[addr] = w
	watchMu.Unlock()
	return &watchListener{Listener: l, addr: addr, w: w}, nil
}

// Addr reads "*" as every interface, as the library's TCP does.
func (watchTransport) Addr(ep string) (string, error) { return transport.New("tcp").Addr(ep) }

type watchListener struct {
	net.Listener
	addr string
	w    *watch
}

func (l *watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	wc := &watchedConn{Conn: c, w: l.w}
	l.w.mu.Lock()
	l.w.conns[wc] = struct{}{}
	l.w.mu.Unlock()
	return wc, nil
}

func (l *watchListener) Close() error {
	watchMu.Lock()
	if watches[l.addr] == l.w {
		delete(watches, l.addr)
	}
	watchMu.Unlock()
	return l.Listener.Close()
}

// watchedConn notes when a write started until it returns.
type watchedConn struct {
	net.Conn
	w     *watch
	since atomic.Int64 // unix ns of the write in progress, 0 when none
}

func (c *watchedConn) Write(b []byte) (int, error) {
	c.since.Store(time.Now().UnixNano())
	n, err := c.Conn.Write(b)
	c.since.Store(0)
	return n, err
}

func (c *watchedConn) Close() error {
	c.w.mu.Lock()
	delete(c.w.conns, c)
	c.w.mu.Unlock()
	return c.Conn.Close()
}
