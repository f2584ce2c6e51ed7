// Package endpoint reads a remote_dram tier's endpoint: the one parser the
// scenario check, the Redis/Valkey store and the RDMA store share, so what
// a scenario accepts is exactly what a replay can open.
package endpoint

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Endpoint is a parsed endpoint.
type Endpoint struct {
	Scheme string // redis, valkey or rdma
	Addr   string // host:port
	DB     int    // redis and valkey: the database (the path)
	// rdma: ?device=NAME, the local device ("" = the first with an ACTIVE
	// port), and ?gid_index=N, the local source GID (RoCE v2).
	Device   string
	GIDIndex int
}

// Parse reads redis://HOST:PORT[/DB], valkey://HOST:PORT[/DB] or
// rdma://HOST:PORT[?device=NAME&gid_index=N].
func Parse(s string) (Endpoint, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return Endpoint{}, fmt.Errorf("%q is not a URL", s)
	case u.Scheme != "redis" && u.Scheme != "valkey" && u.Scheme != "rdma":
		return Endpoint{}, fmt.Errorf(`%q: want "redis://HOST:PORT", "valkey://HOST:PORT" or "rdma://HOST:PORT"`, s)
	case u.Opaque != "" || !validHost(u.Hostname()):
		return Endpoint{}, fmt.Errorf("%q: no host (want %s://HOST:PORT)", s, u.Scheme)
	}
	e := Endpoint{Scheme: u.Scheme, Addr: net.JoinHostPort(u.Hostname(), u.Port())}
	if u.Scheme == "rdma" {
		return e, rdmaParams(s, u, &e)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Endpoint{}, fmt.Errorf("%q: only %s://HOST:PORT[/DB] is read (no user, query or fragment)", s, u.Scheme)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return Endpoint{}, fmt.Errorf("%q: no port 1-65535 (want %s://HOST:PORT)", s, u.Scheme)
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if e.DB, err = strconv.Atoi(db); err != nil || e.DB < 0 {
			return Endpoint{}, fmt.Errorf("%q: the path must be a database number, got %q", s, db)
		}
	}
	return e, nil
}

func rdmaParams(s string, u *url.URL, e *Endpoint) error {
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: no port 1-65535 (want rdma://HOST:PORT)", s)
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q: only rdma://HOST:PORT[?device=NAME&gid_index=N] is read (no user, path or fragment)", s)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fmt.Errorf("%q: bad query: %v", s, err)
	}
	for k, v := range q {
		switch {
		case len(v) != 1:
			return fmt.Errorf("%q: %s given %d times", s, k, len(v))
		case k == "device":
			if e.Device = v[0]; e.Device == "" {
				return fmt.Errorf("%q: empty device", s)
			}
		case k == "gid_index":
			if e.GIDIndex, err = strconv.Atoi(v[0]); err != nil || e.GIDIndex < 0 || e.GIDIndex > 255 {
				return fmt.Errorf("%q: gid_index %q: want 0-255", s, v[0])
			}
		default:
			return fmt.Errorf("%q: unknown parameter %q (device, gid_index)", s, k)
		}
	}
	return nil
}

// validHost: a name, an IPv4 address or an IPv6 address (with a zone);
// url.Parse lets through hosts such as "]" or ":" from "rdma://]:1".
func validHost(h string) bool {
	if h == "" || strings.ContainsAny(h, "[]") {
		return false
	}
	if strings.Contains(h, ":") {
		ip, _, _ := strings.Cut(h, "%")
		return net.ParseIP(ip) != nil
	}
	return true
}
