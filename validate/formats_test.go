package validate

import (
	"strings"
	"testing"
)

// Without start_times, arrivals come from request_rate, one every
// 1/rate in file order (failed requests keep their place), and a note
// says the real gaps were random.
func TestValidateDerivedArrivals(t *testing.T) {
	doc := `{"request_rate": 2.0, "burstiness": 1.0, "max_concurrency": 4,
	"input_lens": [10, 20, 30], "output_lens": [2, 0, 3], "ttfts": [0.1, 0, 0.2],
	"itls": [[0.05], [], [0.01, 0.02]], "errors": ["", "boom", ""]}`
	rs, err := parseVLLM([]byte(doc), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Recs) != 2 || rs.Failed != 1 || rs.Recs[0].ArrivalNs != 0 || rs.Recs[1].ArrivalNs != 1e9 {
		t.Fatalf("records %+v, failed %d: want arrivals 0 and 1 s, one failed", rs.Recs, rs.Failed)
	}
	if r := rs.Recs[1]; r.TTFTNs != 2e8 || r.E2ENs != 2.3e8 {
		t.Errorf("TTFT %d, E2E %d: want 0.2 s and 0.23 s", r.TTFTNs, r.E2ENs)
	}
	if len(rs.Notes) != 1 || !strings.Contains(rs.Notes[0], "one every 0.5 s") || !strings.Contains(rs.Notes[0], "at random") || !strings.Contains(rs.Notes[0], "max_concurrency 4") {
		t.Errorf("notes %q", rs.Notes)
	}
	// Constant gaps (burstiness inf, as Python writes it) are exact: no
	// caveat; "inf" puts every request at 0.
	rs, err = parseVLLM([]byte(`{"request_rate": 4, "burstiness": Infinity, "input_lens": [1, 1], "output_lens": [1, 1], "ttfts": [0.1, 0.1], "latencies": [0.1, 0.1]}`), "r.json")
	if err != nil || rs.Recs[1].ArrivalNs != 25e7 || strings.Contains(rs.Notes[0], "random") {
		t.Errorf("burstiness inf: %v, %+v, %q", err, rs.Recs, rs.Notes)
	}
	rs, err = parseVLLM([]byte(`{"request_rate": "inf", "input_lens": [1, 1], "output_lens": [1, 1], "ttfts": [0.1, 0.1], "latencies": [0.1, 0.1]}`), "r.json")
	if err != nil || rs.Recs[1].ArrivalNs != 0 || !strings.Contains(rs.Notes[0], "all at once") {
		t.Errorf("request_rate inf: %v, %+v, %q", err, rs.Recs, rs.Notes)
	}
}

// Records are replayed in order of arrival, rebased to the first; ties
// keep file order.
func TestValidateOrder(t *testing.T) {
	jsonl := `{"request_id": "b", "input_toks": 5, "output_toks": 1, "queued_ts": 12.5, "first_token_ts": 12.6, "last_token_ts": 12.6}
{"request_id": "a", "input_toks": 5, "output_toks": 1, "queued_ts": 10, "first_token_ts": 10.1, "last_token_ts": 10.1}
{"request_id": "c", "input_toks": 5, "output_toks": 1, "queued_ts": 12.5, "first_token_ts": 12.7, "last_token_ts": 12.7}
`
	recs, err := parseBench(strings.NewReader(jsonl), "requests.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.ID)
	}
	if strings.Join(got, "") != "abc" || recs[0].ArrivalNs != 0 || recs[1].ArrivalNs != 2.5e9 || recs[2].Line != 3 {
		t.Errorf("order %v, records %+v", got, recs)
	}
}
