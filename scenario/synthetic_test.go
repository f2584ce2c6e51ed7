package scenario

import (
	"testing"

	"kvsim/trace"
)

func TestSyntheticWorkload(t *testing.T) {
	s, err := Parse([]byte(doc("seed = 9\n[workload]\nformat = \"synthetic\"\nrequests = 100\nrate = 2.5\nthink = \"3s\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	g := s.Workload.Gen
	want := trace.DefaultGenConfig()
	want.Seed, want.Requests, want.RatePerSec, want.MeanThinkSec = 9, 100, 2.5, 3
	if g == nil || *g != want || s.Workload.Trace != "synthetic(seed=9)" {
		t.Errorf("gen %+v, trace %q; want %+v", g, s.Workload.Trace, want)
	}
	for _, c := range []struct{ src, want string }{
		{"[workload]\nformat = \"synthetic\"\ntrace = \"t.jsonl\"\n", `scenarios/x.toml:3: workload: trace: a synthetic workload is generated from the scenario's seed, not read from a file`},
		{"[workload]\ntrace = \"t.jsonl\"\nrate = 3.0\n", `scenarios/x.toml:3: workload: rate: only for format = "synthetic"`},
		{"[workload]\nformat = \"synthetic\"\nrate = -1.0\n", `scenarios/x.toml:3: workload: rate: must be > 0`},
		{"[workload]\nformat = \"synthetic\"\nrequests = -5\n", `scenarios/x.toml:3: workload: requests: must be in 0..1000000`},
		{"[workload]\nformat = \"synthetic\"\nthink = \"soon\"\n", `scenarios/x.toml:3: workload: think: bad duration "soon": missing number`},
	} {
		_, err := Parse([]byte(doc(c.src)), path)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}
