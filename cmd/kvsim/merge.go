package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"kvsim/experiment"
	"kvsim/results"
)

// runMerge finishes a sweep run in shards (kvsim sweep --shard I/N) into
// one shared results folder: once every point's folder holds its complete
// set, it writes the folder's index.html, the page the unsharded sweep
// writes. Each DIR is merged in turn; with --into, the DIRs are one
// sweep's shards written into separate folders, copied into one.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "kvsim merge [--assets DIR] [--wait] [--into DEST] DIR...", stderr)
	var o runOptions
	fs.StringVar(&o.assets, "assets", "", "local ECharts 5 dist `DIR` for an offline index (as the sweep's --assets)")
	into := fs.String("into", "", "copy the done points of the DIRs (one sweep's shards, each with its own --out) into `DEST` and merge it")
	quiet := fs.Bool("quiet", false, "print nothing but errors")
	addWaitFlag(fs, &o.wait)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return badInputf("merge: want at least one DIR, the --out of kvsim sweep --shard")
	}
	if o.assets != "" {
		if _, err := os.Stat(filepath.Join(o.assets, "echarts.min.js")); err != nil {
			return badInputf("merge: --assets: %v", err)
		}
	}
	for _, dir := range pos {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return badInputf("merge: %s: not a folder", dir)
		}
	}
	if *into != "" {
		mo := o.output("merge: --into", stderr)
		mo.Out = *into
		sums, err := experiment.Collect(ctx, *into, pos, mo)
		if err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(stdout, "merged %d points from %d folders: wrote %s\n", len(sums), len(pos), filepath.Join(*into, results.IndexFile))
		}
		return nil
	}
	for _, dir := range pos {
		mo := o.output("merge", stderr)
		mo.Out = dir
		sums, err := experiment.Merge(ctx, dir, mo)
		if err != nil { // an *experiment.IncompleteError exits 1: not bad input, the shards are not done
			return err
		}
		if !*quiet {
			fmt.Fprintf(stdout, "merged %d points: wrote %s\n", len(sums), filepath.Join(dir, results.IndexFile))
		}
	}
	return nil
}
