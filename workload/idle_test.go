package workload

import (
	"os"
	"path/filepath"
	"testing"

	"kvsim/core"
	"kvsim/trace"
)

// TestSetIdle checks both estimates on a session by hand: call 0 is
// followed by 1 (after 100 ms) and 2 (after 40 ms), call 1 by 3 (after 300
// ms).
func TestSetIdle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	lines := `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1], "call_id": 0, "parent_call_id": -1, "delay": 0}
{"timestamp": 50, "input_length": 20, "output_length": 1, "hash_ids": [1, 2], "call_id": 2, "parent_call_id": 0, "delay": 40}
{"timestamp": 110, "input_length": 20, "output_length": 1, "hash_ids": [1, 3], "call_id": 1, "parent_call_id": 0, "delay": 100}
{"timestamp": 420, "input_length": 30, "output_length": 1, "hash_ids": [1, 3, 4], "call_id": 3, "parent_call_id": 1, "delay": 300}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	rd, err := trace.Open(path, trace.Options{BlockTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	c, err := NewClosed(NewSource(rd, trace.NewDict()))
	if err != nil {
		t.Fatal(err)
	}
	const ms = int64(1e6)
	never := core.MaxTime
	for _, tc := range []struct {
		mode string
		want []int64 // by trace line: calls 0, 2, 1, 3
	}{
		{IdleOff, []int64{0, 0, 0, 0}},
		{IdleObserved, []int64{0, 40 * ms, 100 * ms, (100 + 300) / 2 * ms}},
		{IdleOracle, []int64{40 * ms, never, 300 * ms, never}},
	} {
		if err := c.SetIdle(tc.mode); err != nil {
			t.Fatal(err)
		}
		for i, w := range tc.want {
			if got := c.reqs[i].IdleNs; got != w {
				t.Errorf("%s: line %d: IdleNs %d, want %d", tc.mode, i+1, got, w)
			}
		}
	}
	// What Follow and Next hand out carries the estimate.
	if err := c.SetIdle(IdleOracle); err != nil {
		t.Fatal(err)
	}
	var r core.Request
	if err := c.Next(&r); err != nil || r.IdleNs != 40*ms {
		t.Errorf("root: %v, IdleNs %d", err, r.IdleNs)
	}
	next, _ := c.Follow(0, 5)
	if len(next) != 2 || next[0].IdleNs != never || next[1].IdleNs != 300*ms {
		t.Errorf("followers %+v", next)
	}
	if err := c.SetIdle("sometimes"); err == nil {
		t.Error("an unknown mode is accepted")
	}
}
