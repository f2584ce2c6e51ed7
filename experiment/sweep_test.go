package experiment

import (
	"strings"
	"testing"

	"kvsim/results"
)

// SweepOrder: a sweep's points in the order of their values, whatever
// their unit; anything that is not one sweep keeps its order.
func TestSweepOrder(t *testing.T) {
	mk := func(key string, vals ...string) []*results.Summary {
		var ss []*results.Summary
		for _, v := range vals {
			ss = append(ss, &results.Summary{Scenario: v, Sweep: &results.SweepPoint{Key: key, Value: v}})
		}
		return ss
	}
	vals := func(ss []*results.Summary) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Sweep.Value)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		in   []*results.Summary
		want string
	}{
		{mk("workload.speedup", "10", "2", "0.5", "1e-1"), "1e-1,0.5,2,10"},
		{mk("tier.dram.capacity", "128GiB", "32GiB", "1TB", "512MB"), "512MB,32GiB,128GiB,1TB"},
		{mk("tier.ssd.latency", "1ms", "100us", "20us"), "20us,100us,1ms"},
		{mk("link.hbm-dram.bandwidth", "25GB/s", "800MiB/s", "100Gbit/s"), "800MiB/s,100Gbit/s,25GB/s"},
		{mk("policy.lru.eviction", "lru", "fifo"), "lru,fifo"},     // not values: as given
		{append(mk("a", "2", "1"), mk("b", "0")...), "2,1,0"},      // not one sweep
		{mk("workload.speedup", "3", "1", "2", "1"), "1,1,2,3"},    // stable
		{[]*results.Summary{{Scenario: "x"}, {Scenario: "y"}}, ""}, // no sweep
	} {
		got := SweepOrder(c.in)
		if c.want == "" {
			if got[0].Scenario != "x" {
				t.Error("a run's scenarios reordered")
			}
			continue
		}
		if vals(got) != c.want {
			t.Errorf("%s: got %s, want %s", vals(c.in), vals(got), c.want)
		}
	}
}

// ShardPoints: point k goes to shard k mod N, every point to one shard.
func TestShardPoints(t *testing.T) {
	seen := map[int]int{}
	for i := range 4 {
		for _, k := range ShardPoints(10, i, 4) {
			if k%4 != i {
				t.Errorf("shard %d/4 has point %d", i, k)
			}
			seen[k]++
		}
	}
	for k := range 10 {
		if seen[k] != 1 {
			t.Errorf("point %d in %d shards", k, seen[k])
		}
	}
	if got := ShardPoints(2, 3, 4); len(got) != 0 {
		t.Errorf("shard 3/4 of 2 points: %v", got)
	}
}
