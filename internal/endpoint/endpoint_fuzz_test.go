package endpoint

import (
	"net"
	"net/url"
	"strconv"
	"testing"
)

// FuzzParseEndpoint: any string is either refused or read into an
// endpoint whose address is a host and a port 1-65535, and which reads
// back the same when written out again.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"rdma://10.0.0.2:7471", "rdma://h:1?device=mlx5_0&gid_index=3", "rdma://[::1]:9", "rdma://h", "redis://h:1", "rdma://h:1/x", "rdma://h:1?gid_index=256", "valkey://cache:7000/2", "redis://h:1?db=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			return
		}
		host, port, err := net.SplitHostPort(e.Addr)
		if err != nil || host == "" {
			t.Fatalf("%q: address %q", s, e.Addr)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			t.Fatalf("%q: port %q", s, port)
		}
		if e.GIDIndex < 0 || e.GIDIndex > 255 {
			t.Fatalf("%q: gid_index %d", s, e.GIDIndex)
		}
		again := e.Scheme + "://" + e.Addr + "/" + strconv.Itoa(e.DB)
		if e.Scheme == "rdma" {
			again = "rdma://" + e.Addr + "?gid_index=" + strconv.Itoa(e.GIDIndex)
			if e.Device != "" {
				again += "&device=" + url.QueryEscape(e.Device)
			}
		}
		e2, err := Parse(again)
		if err != nil || e2 != e {
			t.Fatalf("%q: read as %+v, written as %q, read back as %+v (%v)", s, e, again, e2, err)
		}
	})
}
