package scenario

import (
	"strings"
	"testing"
)

const endpointDoc = `
[model]
layers = 2
kv_heads = 1
head_dim = 64
[[tier]]
kind = "hbm"
capacity = "1GiB"
[[tier]]
name = "far"
kind = "KIND"
ENDPOINT
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
`

func endpointScenario(kind, endpoint string) string {
	s := strings.Replace(endpointDoc, "KIND", kind, 1)
	if endpoint != "" {
		return strings.Replace(s, "ENDPOINT", "endpoint = "+endpoint, 1)
	}
	return strings.Replace(s, "ENDPOINT", "", 1)
}

func TestTierEndpoint(t *testing.T) {
	for _, c := range []struct{ kind, endpoint, want, err string }{
		{"remote_dram", `"redis://10.0.0.2:6379"`, "redis://10.0.0.2:6379", ""},
		{"remote_dram", `"valkey://cache:7000/2"`, "valkey://cache:7000/2", ""},
		{"remote_dram", "", "", ""},
		{"dram", `"redis://h:1"`, "", `s.toml:12: tier "far": endpoint: only a "remote_dram" tier has one (this tier is "dram")`},
		{"remote_dram", `"http://h:1"`, "", `s.toml:12: tier "far": endpoint: "http://h:1": want "redis://HOST:PORT", "valkey://HOST:PORT" or "rdma://HOST:PORT"`},
		{"remote_dram", `"rdma://10.0.0.2:7471"`, "rdma://10.0.0.2:7471", ""},
		{"remote_dram", `"rdma://[fe80::1]:7471?device=mlx5_1&gid_index=3"`, "rdma://[fe80::1]:7471?device=mlx5_1&gid_index=3", ""},
		{"dram", `"rdma://h:1"`, "", `only a "remote_dram" tier has one`},
		{"remote_dram", `"rdma://h"`, "", `"rdma://h": no port 1-65535 (want rdma://HOST:PORT)`},
		{"remote_dram", `"rdma://:7471"`, "", `no host`},
		{"remote_dram", `"rdma://]:1"`, "", `no host`},  // url.Parse takes "]" for a host
		{"remote_dram", `"redis://::1"`, "", `no host`}, // and ":" (port 1)
		{"remote_dram", `"redis://[::1]:6379"`, "redis://[::1]:6379", ""},
		{"remote_dram", `"rdma://h:1/0"`, "", `no user, path or fragment`},
		{"remote_dram", `"rdma://h:1?gid_index=x"`, "", `gid_index "x": want 0-255`},
		{"remote_dram", `"rdma://h:1?gid_index=256"`, "", `want 0-255`},
		{"remote_dram", `"rdma://h:1?device="`, "", `empty device`},
		{"remote_dram", `"rdma://h:1?port=2"`, "", `unknown parameter "port"`},
		{"remote_dram", `"rdma://h:1?device=a&device=b"`, "", `device given 2 times`},
		{"remote_dram", `"redis://h"`, "", `endpoint: "redis://h": no port 1-65535`},
		{"remote_dram", `"redis://h:99999"`, "", `no port 1-65535`},
		{"remote_dram", `"redis://:6379"`, "", `no host`},
		{"remote_dram", `"redis://h:1/x"`, "", `database number`},
		{"remote_dram", `"redis://u:pw@h:1"`, "", `no user`},
		{"remote_dram", `6379`, "", `endpoint`},
	} {
		s, err := Parse([]byte(endpointScenario(c.kind, c.endpoint)), "s.toml")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s %s: error %v, want one line with %q", c.kind, c.endpoint, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.kind, c.endpoint, err)
			continue
		}
		if got := s.Tiers[1].Endpoint; got != c.want {
			t.Errorf("%s %s: endpoint %q, want %q", c.kind, c.endpoint, got, c.want)
		}
	}
}

// --set reaches the key like any other.
func TestTierEndpointSet(t *testing.T) {
	s, err := ParseWith([]byte(endpointScenario("remote_dram", "")), "s.toml", []string{`tier.far.endpoint="redis://127.0.0.1:6380"`})
	if err != nil || s.Tiers[1].Endpoint != "redis://127.0.0.1:6380" {
		t.Fatalf("%v, %+v", err, s)
	}
}
