package validate

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/report"
	"kvsim/scenario"
)

// fixtureScenario loads testdata/fixture.toml.
func fixtureScenario(t *testing.T) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("testdata", "fixture.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// selfRecords is a trace replayed through kvsim itself: its records hold
// kvsim's own TTFT and E2E, so validating them must give zero error.
func selfRecords(t *testing.T, sc *scenario.Scenario) []Record {
	t.Helper()
	var recs []Record
	for i := range 40 {
		recs = append(recs, Record{Line: i + 1, ArrivalNs: int64(i)*37_123_457 + int64(i%3)*1_000_001,
			InputTokens: 30 + (i*211)%1500, OutputTokens: 1 + (i*53)%200})
	}
	res, err := Run(context.Background(), sc, &Records{File: "self", Recs: recs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range res.PerRequest {
		if q.Rejected {
			t.Fatalf("request %d rejected: the fixture must run every request", i)
		}
		recs[i].TTFTNs = int64(math.Round(float64(q.TTFTMs[1]) * 1e6))
		recs[i].E2ENs = int64(math.Round(float64(q.E2EMs[1]) * 1e6))
	}
	if res.Preemptions != 0 {
		t.Logf("%d preemptions", res.Preemptions)
	}
	return recs
}

// sec prints ns as decimal seconds, exactly (nine decimals).
func sec(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return fmt.Sprintf("%s%d.%09d", sign, ns/1e9, ns%1e9)
}

// clock is an origin like a monotonic clock's: large, so that the exact
// reading of decimals matters.
const clock = 479748_340626232

func writeBench(t *testing.T, dir string, recs []Record) string {
	t.Helper()
	var b strings.Builder
	for i, r := range recs {
		q := clock + r.ArrivalNs
		fmt.Fprintf(&b, `{"request_id": "bench-%d", "input_toks": %d, "output_toks": %d, "arrival_time": 1777142838.338653, "queued_ts": %s, "scheduled_ts": %s, "first_token_ts": %s, "last_token_ts": %s}`+"\n",
			i, r.InputTokens, r.OutputTokens, sec(q), sec(q), sec(q+r.TTFTNs), sec(q+r.E2ENs))
	}
	mustWrite(t, filepath.Join(dir, "requests.jsonl"), b.String())
	mustWrite(t, filepath.Join(dir, "meta.json"), `{"model": "m", "vllm_version": "0.19.0", "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 6, "max_num_batched_tokens": 512, "max_model_len": null}}`)
	return dir
}

// writeVLLM writes a benchmark result; with latencies false, E2E comes
// from the inter-token gaps (an older benchmark's file).
func writeVLLM(t *testing.T, path string, recs []Record, latencies bool) string {
	t.Helper()
	col := func(name string, f func(r Record) string) string {
		var parts []string
		for _, r := range recs {
			parts = append(parts, f(r))
		}
		return fmt.Sprintf("  %q: [\n    %s\n  ]", name, strings.Join(parts, ",\n    "))
	}
	fields := []string{`  "date": "20260425-184718", "request_rate": 10.0, "burstiness": Infinity, "max_concurrency": null`,
		col("input_lens", func(r Record) string { return fmt.Sprint(r.InputTokens) }),
		col("output_lens", func(r Record) string { return fmt.Sprint(r.OutputTokens) }),
		col("ttfts", func(r Record) string { return sec(r.TTFTNs) }),
		col("start_times", func(r Record) string { return sec(clock + r.ArrivalNs) }),
		col("errors", func(Record) string { return `""` }),
		col("itls", func(r Record) string {
			// output - 1 gaps summing to E2E - TTFT exactly.
			n := int64(r.OutputTokens - 1)
			if n == 0 {
				return "[]"
			}
			d := r.E2ENs - r.TTFTNs
			var g []string
			for k := range n {
				x := d / n
				if k < d%n {
					x++
				}
				g = append(g, sec(x))
			}
			return "[" + strings.Join(g, ", ") + "]"
		}),
	}
	if latencies {
		fields = append(fields, col("latencies", func(r Record) string { return sec(r.E2ENs) }))
	}
	mustWrite(t, path, "{\n"+strings.Join(fields, ",\n")+"\n}\n")
	return path
}

func writeCSV(t *testing.T, path string, recs []Record) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(CSVHeader + "\n")
	for _, r := range recs {
		fmt.Fprintf(&b, "%s,%d,%d,%s,%s\n", sec(r.ArrivalNs+123_456_789), r.InputTokens, r.OutputTokens, sec(r.TTFTNs), sec(r.E2ENs))
	}
	mustWrite(t, path, b.String())
	return path
}

func mustWrite(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestValidateSelfFixture: kvsim's own results, written in each format,
// validate with zero error on the scenario that made them.
func TestValidateSelfFixture(t *testing.T) {
	sc := fixtureScenario(t)
	recs := selfRecords(t, sc)
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench")
	os.Mkdir(bench, 0o755)
	for _, c := range []struct{ name, path, format string }{
		{"bench", writeBench(t, bench, recs), ""},
		{"vllm with latencies", writeVLLM(t, filepath.Join(dir, "lat.json"), recs, true), ""},
		{"vllm from itls", writeVLLM(t, filepath.Join(dir, "itls.json"), recs, false), "vllm"},
		{"csv", writeCSV(t, filepath.Join(dir, "r.csv"), recs), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := Load(context.Background(), c.path, c.format)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs.Recs) != len(recs) || len(rs.Notes) != 0 {
				t.Fatalf("read %d records (notes %q), want %d and none", len(rs.Recs), rs.Notes, len(recs))
			}
			r, err := Run(context.Background(), sc, rs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Warnings) != 0 {
				t.Errorf("warnings: %q", r.Warnings)
			}
			for _, m := range r.Metrics() {
				x := m.M
				if x.MeanErrorPct != 0 || x.MAPEPct != 0 || x.BiasPct != 0 || x.KS != 0 || x.Measured != x.Predicted {
					t.Errorf("%s: mean error %v%%, MAPE %v%%, bias %v%%, KS %v; measured %+v, predicted %+v: want all zero and equal",
						m.Name, x.MeanErrorPct, x.MAPEPct, x.BiasPct, x.KS, x.Measured, x.Predicted)
				}
			}
			if r.TPOT.Requests == 0 || r.TPOT.Requests >= r.TTFT.Requests {
				t.Errorf("TPOT over %d requests, TTFT %d: the fixture should have some with one output token", r.TPOT.Requests, r.TTFT.Requests)
			}
		})
	}
}

// TestValidateDeterministic: the same inputs give byte-identical JSON
// and pages.
func TestValidateDeterministic(t *testing.T) {
	sc := fixtureScenario(t)
	recs := selfRecords(t, sc)
	// Skew the records so that the errors are not all zero.
	for i := range recs {
		ttft, decode := recs[i].TTFTNs, recs[i].E2ENs-recs[i].TTFTNs
		recs[i].TTFTNs = ttft * (90 + int64(i%20)) / 100
		recs[i].E2ENs = recs[i].TTFTNs + decode*11/10
	}
	path := writeCSV(t, filepath.Join(t.TempDir(), "r.csv"), recs)
	var first, page []byte
	for range 3 {
		rs, err := Load(context.Background(), path, "")
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), fixtureScenario(t), rs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p, err := r.Page(reportOptions)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, page = b, p
			if r.E2E.MAPEPct == 0 {
				t.Fatal("skewed records gave zero error")
			}
			continue
		}
		if !bytes.Equal(b, first) || !bytes.Equal(p, page) {
			t.Fatal("the same inputs gave different JSON or HTML")
		}
	}
}

var reportOptions = report.Options{}
