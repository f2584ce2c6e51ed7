package experiment

import (
	"context"
	"testing"
)

// TestViewDelay: kv_cost routed by a view an hour late (longer than the
// 400 requests take to arrive) sees an empty, idle cluster at every
// arrival, so every cost ties and every request goes to instance 0; with
// the exact view the requests spread. A zero delay is the exact view.
func TestViewDelay(t *testing.T) {
	run := func(sets ...string) ([]int64, float64) {
		sets = append(sets, "cluster.router=kv_cost")
		sc := load(t, "../scenarios/cluster_routers.toml", sets...)
		sum, err := Run(context.Background(), sc, Options{Limit: 400, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		p := sum.Policies[0]
		return p.Router.Decisions, p.HitRatio
	}
	exact, exactHit := run()
	zero, zeroHit := run("cluster.view_delay=0s")
	late, _ := run("cluster.view_delay=3600s")
	if exact[0] == 400 || zeroHit != exactHit || zero[0] != exact[0] {
		t.Fatalf("exact view: decisions %v, hit %v; zero delay: %v, %v", exact, exactHit, zero, zeroHit)
	}
	if late[0] != 400 {
		t.Fatalf("a view an hour late: decisions %v, want all 400 on instance 0", late)
	}
}
