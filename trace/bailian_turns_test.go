package trace

import (
	"slices"
	"strings"
	"testing"
)

// TestBailianCumulativeTurns: a Bailian follow-up's input already holds
// the earlier turns (its hash_ids start with theirs; aiperf issue 1392 read
// it as new text only and added the history again). kvsim takes the line
// as it is: the second turn is its own 80 tokens, not 48 + 80, and its
// first three blocks are the first turn's, so a replay finds them cached.
func TestBailianCumulativeTurns(t *testing.T) {
	const fixture = `{"chat_id": 7, "parent_chat_id": -1, "timestamp": 10, "input_length": 48, "output_length": 16, "type": "text", "turn": 1, "hash_ids": [501, 502, 503]}
{"chat_id": 8, "parent_chat_id": 7, "timestamp": 12.5, "input_length": 80, "output_length": 4, "type": "text", "turn": 2, "hash_ids": [501, 502, 503, 504, 505]}
`
	r := NewReader(strings.NewReader(fixture), "turns.jsonl", Options{Format: "bailian", BlockTokens: 16})
	var a, b Request
	if err := r.Next(&a); err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(a.HashIDs)
	if err := r.Next(&b); err != nil {
		t.Fatal(err)
	}
	if b.InputTokens != 80 || len(b.HashIDs) != 5 {
		t.Fatalf("second turn: %d tokens, %d blocks; want 80 and 5 (the history is in the line already)", b.InputTokens, len(b.HashIDs))
	}
	if !slices.Equal(b.HashIDs[:3], first) || slices.Contains(first, b.HashIDs[3]) {
		t.Fatalf("second turn's blocks %v do not start with the first's %v", b.HashIDs, first)
	}
	if b.Parent != 1 || b.Think != 2_500_000_000 {
		t.Fatalf("second turn follows line %d after %d ns; want line 1, 2.5 s", b.Parent, b.Think)
	}
}
