package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"kvsim/hw/rdmastore"
	"kvsim/scenario"
)

// runServe is kvsim serve: DRAM exposed over RDMA to the remote_dram tiers
// of replays elsewhere (endpoint = "rdma://HOST:PORT"), until SIGINT or
// SIGTERM. The logic is hw/rdmastore's; this is flags, printing and exit
// codes.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "kvsim serve --rdma HOST:PORT --capacity SIZE [--device NAME] [--gid-index N] [--hugepages off|try|require]", stderr)
	addr := fs.String("rdma", "", "listen for RDMA peers' control connections at `HOST:PORT` (required; replays name it as endpoint = \"rdma://HOST:PORT\")")
	capacity := fs.String("capacity", "", "bytes of DRAM to serve, e.g. 64GiB (required; at least the tier's capacity at the replay's --block-bytes)")
	device := fs.String("device", "", "the RDMA device to use (default: the first with an ACTIVE port)")
	gid := fs.Int("gid-index", 0, "the source GID index on RoCE (the port's RoCE v2 entry to route across subnets)")
	huge := fs.String("hugepages", "try", "back the served memory with hugepages: off, try (fall back to 4 KiB pages) or require")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return badInputf("serve: unexpected argument %q", pos[0])
	case *addr == "":
		return badInputf("serve: --rdma HOST:PORT is required")
	case *capacity == "":
		return badInputf("serve: --capacity SIZE is required")
	case *gid < 0 || *gid > 255:
		return badInputf("serve: --gid-index %d: want 0-255", *gid)
	}
	if _, _, err := net.SplitHostPort(*addr); err != nil {
		return badInputf("serve: --rdma %q: want HOST:PORT (%v)", *addr, err)
	}
	n, err := scenario.ParseBytes(*capacity)
	if err != nil {
		return badInputf("serve: --capacity: %v", err)
	}
	if n <= 0 {
		return badInputf("serve: --capacity %s: must be positive", *capacity)
	}
	switch *huge {
	case "off", "try", "require":
	default:
		return badInputf("serve: --hugepages %q: want off, try or require", *huge)
	}
	var mu sync.Mutex // peers' goroutines report on stderr
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "kvsim: "+format+"\n", args...)
	}
	srv, err := rdmastore.Listen(rdmastore.ServerOptions{Addr: *addr, Capacity: n, Device: *device, GIDIndex: *gid, Hugepages: *huge, Logf: logf})
	if err != nil {
		// No verbs path, a device or port that is not there, the
		// locked-memory limit, an address in use: the user's to fix.
		return badInputf("serve: %s", strings.TrimPrefix(err.Error(), "rdma: "))
	}
	fmt.Fprintf(stdout, "kvsim serve: %s; stop with Ctrl-C\n", srv)
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	var serr error
	select {
	case <-ctx.Done():
	case serr = <-done:
	}
	cerr := srv.Close()
	if serr == nil {
		serr = <-done
	}
	if serr != nil {
		return fmt.Errorf("serve: %v", serr)
	}
	if cerr != nil {
		return fmt.Errorf("serve: closing: %v", cerr)
	}
	fmt.Fprintf(stdout, "kvsim serve: stopped after %d queue pairs\n", srv.Served())
	return nil
}
