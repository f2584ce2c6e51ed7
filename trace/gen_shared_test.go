package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestGenerateSharedPrefix(t *testing.T) {
	st, err := ParseStages("20x10, 5x4")
	if err != nil || len(st) != 2 || st[1] != (RateStage{5, 4}) {
		t.Fatalf("stages %v, %v", st, err)
	}
	for _, bad := range []string{"", "3", "0x5", "3x-1", "ax1"} {
		if _, err := ParseStages(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// 100-token blocks: a 250-token prompt fills 2 shared blocks; the third
	// holds its end and the question's start; 380 tokens in 4 blocks.
	c := SharedPrefixConfig{Seed: 3, BlockTokens: 100, Groups: 3, Users: 2, SystemTokens: 250,
		QuestionTokens: 130, OutputTokens: 7, Stages: st}
	var a, b bytes.Buffer
	if err := GenerateSharedPrefix(&a, c); err != nil {
		t.Fatal(err)
	}
	if err := GenerateSharedPrefix(&b, c); err != nil || a.String() != b.String() {
		t.Fatal("not deterministic")
	}
	lines := strings.Split(strings.TrimSpace(a.String()), "\n")
	if n := len(lines); n < 150 || n > 330 { // 220 expected
		t.Fatalf("%d requests, want about 220", n)
	}
	owner := map[int64][2]int{} // block -> (group, user or -1 when shared)
	last := int64(-1)
	for _, l := range lines {
		var r struct {
			Timestamp    int64   `json:"timestamp"`
			InputLength  int     `json:"input_length"`
			OutputLength int     `json:"output_length"`
			HashIDs      []int64 `json:"hash_ids"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Timestamp < last || r.Timestamp >= 14000 || r.InputLength != 380 || r.OutputLength != 7 || len(r.HashIDs) != 4 {
			t.Fatalf("line %s", l)
		}
		last = r.Timestamp
		g := int(r.HashIDs[0] / 6) // 2 shared + 2 users x 2 own blocks per group
		u := int(r.HashIDs[2]-r.HashIDs[0]-2) / 2
		for k, id := range r.HashIDs {
			who := [2]int{g, -1}
			if k >= 2 {
				who[1] = u
			}
			if o, ok := owner[id]; ok && o != who {
				t.Fatalf("block %d of %v and %v", id, o, who)
			}
			owner[id] = who
		}
	}
}

// TestAgenticCallFields: call_id links a call to its parent call's line
// (several may follow one), delay is its wait; a wrong type is a bad line.
func TestAgenticCallFields(t *testing.T) {
	const in = `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1], "call_id": 5, "parent_call_id": -1}
{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "call_id": 6, "parent_call_id": 5, "delay": 3}
{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "call_id": 7, "parent_call_id": 5, "delay": 4, "session_id": "s"}
{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "call_id": "x"}
`
	r := NewReader(strings.NewReader(in), "calls.jsonl", Options{BlockTokens: 16, SkipBadLines: true})
	var got [][2]int64
	var q Request
	for r.Next(&q) == nil {
		got = append(got, [2]int64{int64(q.Parent), q.Think})
	}
	want := [][2]int64{{0, 0}, {1, 3e6}, {1, 4e6}}
	if len(got) != len(want) {
		t.Fatalf("%d requests: %v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("request %d: parent, think %v; want %v", i, got[i], want[i])
		}
	}
}
