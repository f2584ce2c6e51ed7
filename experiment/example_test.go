package experiment_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"kvsim/core"
	"kvsim/experiment"
	"kvsim/results"
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

// Run with Options.Out writes a complete results folder, the same as kvsim
// run writes: locked while written, summary.json, requests.csv and
// report.html put in place as one set. Rerender, what kvsim report does,
// renders the same page again from the saved files, byte for byte.
func Example_resultsFolder() {
	out, err := os.MkdirTemp("", "kvsim-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(out)
	sc, err := scenario.Load("../scenarios/quickstart.toml")
	if err != nil {
		panic(err)
	}
	if _, err := experiment.Run(context.Background(), sc, experiment.Options{Out: out, Limit: 200, Workers: 2}); err != nil {
		panic(err)
	}
	dir := filepath.Join(out, sc.Name)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != results.LockFile {
			fmt.Println(filepath.Join(sc.Name, e.Name()))
		}
	}
	page := filepath.Join(dir, results.PageFile)
	ran, _ := os.ReadFile(page)
	if err := experiment.Rerender(context.Background(), []string{dir}, experiment.Options{}, nil); err != nil {
		panic(err)
	}
	again, _ := os.ReadFile(page)
	fmt.Println("re-rendered report.html identical:", bytes.Equal(ran, again))
	// Output:
	// quickstart/report.html
	// quickstart/requests.csv
	// quickstart/summary.json
	// re-rendered report.html identical: true
}
