package validate

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"kvsim/experiment"
)

// checkParsed holds what every parser promises: an error is bad input in
// one line; records come in order of arrival, rebased to 0, within range;
// and a few of them replay without failing.
func checkParsed(t *testing.T, recs []Record, err error) {
	t.Helper()
	if err != nil {
		var ie *experiment.InputError
		if !errors.As(err, &ie) || strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("error not one line of bad input: %q", err)
		}
		return
	}
	for i, r := range recs {
		switch {
		case i == 0 && r.ArrivalNs != 0, i > 0 && r.ArrivalNs < recs[i-1].ArrivalNs:
			t.Fatalf("record %d arrives at %d: not rebased or out of order", i, r.ArrivalNs)
		case r.InputTokens < 1 || r.InputTokens > maxTokens || r.OutputTokens < 1 || r.OutputTokens > maxTokens:
			t.Fatalf("record %d: tokens %d, %d out of range", i, r.InputTokens, r.OutputTokens)
		case r.TTFTNs < 0 || r.E2ENs < r.TTFTNs:
			t.Fatalf("record %d: TTFT %d, E2E %d", i, r.TTFTNs, r.E2ENs)
		}
	}
	if len(recs) == 0 || len(recs) > 8 {
		return
	}
	for i := range recs {
		recs[i].InputTokens = min(recs[i].InputTokens, 4096) // keep each case fast
		recs[i].OutputTokens = min(recs[i].OutputTokens, 64)
	}
	sc := fixtureScenario(t)
	if _, err := Run(context.Background(), sc, &Records{File: "fuzz", Recs: recs}, Options{}); err != nil {
		var ie *experiment.InputError
		if !errors.As(err, &ie) {
			t.Fatalf("replay: %v", err)
		}
	}
}

func FuzzBench(f *testing.F) {
	f.Add([]byte(`{"request_id": "bench-0", "input_toks": 2358, "output_toks": 531, "queued_ts": 479748.340626232, "first_token_ts": 479748.510151426, "last_token_ts": 479764.054028055}`+"\n"),
		[]byte(`{"engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 128, "max_num_batched_tokens": 2048}}`))
	f.Add([]byte("{\"input_toks\": 1, \"output_toks\": 1, \"queued_ts\": 1e3, \"first_token_ts\": 1000, \"last_token_ts\": 1000.5}\n\n{}\n"), []byte("null"))
	f.Add([]byte(`{"input_toks": 1.0, "output_toks": -1, "queued_ts": "x"}`), []byte(`{"engine_kwargs": {"max_num_seqs": null}}`))
	f.Fuzz(func(t *testing.T, jsonl, meta []byte) {
		recs, err := parseBench(bytes.NewReader(jsonl), "requests.jsonl")
		checkParsed(t, recs, err)
		if _, err := parseMeta(meta, "meta.json"); err != nil {
			checkParsed(t, nil, err)
		}
	})
}

func FuzzVLLM(f *testing.F) {
	f.Add([]byte("{\n  \"request_rate\": 10.0, \"burstiness\": Infinity,\n  \"input_lens\": [10, 20],\n  \"output_lens\": [3, 0],\n  \"ttfts\": [0.1, 0.0],\n  \"itls\": [[0.01, 0.02], []],\n  \"errors\": [\"\", \"timeout\"]\n}"))
	f.Add([]byte(`{"input_lens": [5], "output_lens": [2], "ttfts": [0.5], "latencies": [0.75], "start_times": [12345.678]}`))
	f.Add([]byte(`{"input_lens": [5], "output_lens": [2], "ttfts": [NaN], "latencies": [-Infinity], "request_rate": "inf", "ramp_up_strategy": "linear"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := parseVLLM(b, "result.json")
		if err != nil {
			checkParsed(t, nil, err)
			return
		}
		checkParsed(t, rs.Recs, nil)
		if rs.Failed < 0 {
			t.Fatal("negative failures")
		}
	})
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte(CSVHeader + "\n0.000,1200,40,0.120,1.400\n0.150,300,1,0.050,0.050\n"))
	f.Add([]byte("e2e_s,ttft_s,extra,output_tokens,input_tokens,arrival_s\n\"1.5\",0.5,x,2,10,-3\n"))
	f.Add([]byte("\ufeffarrival_s,input_tokens,output_tokens,ttft_s,e2e_s\n1,2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := parseCSV(bytes.NewReader(b), "run.csv")
		checkParsed(t, recs, err)
	})
}
