package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kvsim/events"
	"kvsim/validate"
)

// truthReq is one request of kvsim's requests.csv, as the join should see it.
type truthReq struct {
	arrivalMs, ttftMs float64
	input, output     int
	blocks, hbmHits   int64 // blocks of its prompt (with the partial last one), HBM hits
	inst              int
}

// readTruth reads the first policy's requests from kvsim's requests.csv,
// in arrival order (as validate orders the CSV it is converted to).
func readTruth(t *testing.T, path string) []truthReq {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	num := func(r []string, c string) float64 {
		v, err := strconv.ParseFloat(r[col[c]], 64)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, c, err)
		}
		return v
	}
	var out []truthReq
	for _, r := range rows[1:] {
		if r[col["policy"]] != rows[1][col["policy"]] || r[col["rejected"]] != "false" {
			continue
		}
		out = append(out, truthReq{num(r, "arrival_ms"), num(r, "ttft_ms"), int(num(r, "input_tokens")), int(num(r, "output_tokens")),
			int64(num(r, "blocks")), int64(num(r, "hit_blocks_hbm")), int(num(r, "instance"))})
	}
	// Stable: requests arriving together keep file order, as validate does.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].arrivalMs < out[j-1].arrivalMs; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// kvEventsJoin joins kvsim's own requests (as the CSV kvsim validate
// reads) to the recording of its events and checks the join against
// what kvsim knows: every GPU store is claimed or counted unclaimed; a
// request whose window [arrival, first token] overlaps no other
// request's is joined exactly (its GPU stores, instance and the GPU
// prefix hits the events cannot see); the offset estimate lands where
// the given one is, within the slack.
func kvEventsJoin(t *testing.T, log, requestsCSV string, stores int64) {
	t.Helper()
	truth := readTruth(t, requestsCSV)
	var b strings.Builder
	b.WriteString(validate.CSVHeader + "\n")
	for _, r := range truth {
		fmt.Fprintf(&b, "%.6f,%d,%d,%.6f,%.6f\n", r.arrivalMs/1000, r.input, r.output, r.ttftMs/1000, r.ttftMs/1000+0.001)
	}
	reqs := filepath.Join(t.TempDir(), "requests.csv")
	if err := os.WriteFile(reqs, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	join := func(extra ...string) *events.JoinResult {
		args := append([]string{"events", "whatif", log, "--block-tokens", "512", "--capacities", "64,256", "--requests", reqs,
			"--prompt-blocks", "ceil", "--json"}, extra...)
		var out, stderr bytes.Buffer
		if err := run(context.Background(), args, &out, &stderr); err != nil {
			t.Fatalf("%v: %v: %s", args, err, stderr.String())
		}
		var jr events.JoinResult
		if err := json.Unmarshal(out.Bytes(), &jr); err != nil {
			t.Fatal(err)
		}
		return &jr
	}
	// The first arrival is at simulated time 0, the events' ts origin.
	jr := join("--requests-offset", "0", "--requests-slack", "0s")
	if jr.Requests != len(truth) || len(jr.PerRequest) != len(truth) {
		t.Fatalf("%d requests joined, %d in the log", jr.Requests, len(truth))
	}
	un := 0
	for _, n := range jr.Unmatched {
		un += n
	}
	if jr.Matched+un != jr.Requests || jr.StoresClaimed+jr.StoresUnclaimed != stores {
		t.Errorf("matched %d + unmatched %d of %d requests; claimed %d + unclaimed %d of %d GPU stores",
			jr.Matched, un, jr.Requests, jr.StoresClaimed, jr.StoresUnclaimed, stores)
	}
	// Per request, a candidate's savings are its share of the what-if's:
	// the claimed stores' lookups, no more.
	for k, c := range jr.Candidates {
		if c.TokensSaved > jr.WhatIf.Candidates[k].TokensSaved || c.Capacity != jr.WhatIf.Candidates[k].Capacity {
			t.Errorf("candidate %d blocks: requests saved %d tokens, the what-if %d in all", c.Capacity, c.TokensSaved, jr.WhatIf.Candidates[k].TokensSaved)
		}
	}
	var isolated, exact, sameStores, sameInst int
	var hits, blocks int64
	for i, r := range truth {
		got := jr.PerRequest[i]
		if got.InputTokens != r.input || got.PromptBlocks != r.blocks {
			t.Fatalf("request %d: joined %d tokens in %d blocks, kvsim had %d in %d", i, got.InputTokens, got.PromptBlocks, r.input, r.blocks)
		}
		hits += r.hbmHits
		blocks += r.blocks
		if got.Stored == r.blocks-r.hbmHits {
			sameStores++
			if got.Instance == r.inst {
				sameInst++
			}
		}
		alone := true
		for j, o := range truth {
			if j != i && o.arrivalMs <= r.arrivalMs+r.ttftMs && r.arrivalMs <= o.arrivalMs+o.ttftMs {
				alone = false
				break
			}
		}
		if !alone {
			continue
		}
		isolated++
		if got.Stored == r.blocks-r.hbmHits && got.HitBlocks == r.hbmHits && got.Instance == r.inst {
			exact++
		} else {
			t.Errorf("request %d (arrival %.3f ms, alone in its window): joined %d GPU stores on instance %d, %d hits; kvsim stored %d on %d, %d HBM hits",
				i, r.arrivalMs, got.Stored, got.Instance, got.HitBlocks, r.blocks-r.hbmHits, r.inst, r.hbmHits)
		}
	}
	if isolated == 0 {
		t.Error("no request alone in its window: the check above checked nothing")
	}
	t.Logf("join: %d of %d matched; %d alone in their window, all exact; of all, %d with kvsim's GPU store count (%d also its instance); GPU prefix hits %.4f joined vs %.4f in kvsim (%d/%d blocks)",
		jr.Matched, jr.Requests, isolated, sameStores, sameInst, jr.HitRatio, float64(hits)/float64(blocks), hits, blocks)
	// Estimated, the offset lands within the default slack of the truth.
	est := join()
	if !est.OffsetEstimated || est.Offset < -0.05 || est.Offset > 0.05 {
		t.Errorf("estimated offset %.3f s (estimated %v), want within 0.05 s of 0", est.Offset, est.OffsetEstimated)
	}
	t.Logf("offset estimated %.3f s: %d matched, GPU prefix hits %.4f", est.Offset, est.Matched, est.HitRatio)
}
