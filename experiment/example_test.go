package experiment_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/scenario"
)

// Load a shipped scenario, run its policies over the first 500 requests of
// its trace, and read the results: the summary, and each request as it
// finishes. Nothing is written to disk (Options.Out is empty).
func Example() {
	sc, err := scenario.Load("../scenarios/quickstart.toml")
	if err != nil {
		panic(err)
	}
	var finished atomic.Int64
	sum, err := experiment.Run(context.Background(), sc, experiment.Options{
		Limit:    500,
		Workers:  2,
		OnRecord: func(policy int, r *core.Record) { finished.Add(1) },
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d requests\n", sum.Scenario, sum.Trace.Requests)
	for _, p := range sum.Policies {
		fmt.Printf("%-10s hit %.3f  TTFT p50 %.1f ms\n", p.Name, p.HitRatio, p.TTFTms.P50)
	}
	fmt.Println("records:", finished.Load())
	// Output:
	// quickstart: 500 requests
	// lru        hit 0.423  TTFT p50 45.7 ms
	// fifo       hit 0.423  TTFT p50 45.5 ms
	// s3fifo     hit 0.423  TTFT p50 46.5 ms
	// prefix-lru hit 0.423  TTFT p50 45.5 ms
	// records: 2000
}
