package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/internal/golden"
)

// handLog is a small log whose requests are known: see TestToTraceHandMade.
func handLog(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hand.kvev")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	st := func(parent uint64, hasParent bool, bs int64, medium string, hs ...uint64) Event {
		return Event{Kind: Stored, Hashes: hs, Parent: parent, HasParent: hasParent, BlockSize: bs, Medium: medium, GroupIdx: -1}
	}
	rm := func(hs ...uint64) Event { return Event{Kind: Removed, Hashes: hs, Medium: "GPU", GroupIdx: -1} }
	frames := []struct {
		inst uint32
		ts   float64
		evs  []Event
	}{
		{0, 100.0, []Event{st(0, false, 16, "GPU", 1, 2, 3), st(0, false, 16, "CPU", 9)}},
		{0, 100.5, []Event{st(2, true, 16, "GPU", 4, 5), st(5, true, 16, "GPU", 6), st(0, false, 16, "", 7)}},
		{1, 100.2, []Event{st(0, false, 16, "GPU", 1, 2, 3)}},
		{0, 101.0, []Event{rm(3)}},
		{0, 102.0, []Event{st(2, true, 16, "GPU", 3)}},
	}
	w.Append(&Record{Type: RecSource, Instance: 0, Rank: -1, Endpoint: "tcp://a:1"})
	for i, f := range frames {
		p, err := Encode(&Batch{TS: f.ts, Rank: -1, Events: f.evs}, EncMap)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(&Record{Type: RecFrame, Instance: f.inst, Rank: -1, Recv: int64(i), Seq: uint64(i), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	w.Append(&Record{Type: RecGap, Instance: 1, Rank: -1, Seq: 9, Count: 2, Note: "lost"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestToTraceHandMade checks each derived request exactly, and keeps the
// log as the kvevents format's fixture (its golden is read by cmd/kvsim,
// which sets the converter).
func TestToTraceHandMade(t *testing.T) {
	log := handLog(t)
	golden.Check(t, "../trace/testdata/kvevents_tiny.kvev", log)
	var out bytes.Buffer
	if err := ToTrace(bytes.NewReader(log), "hand.kvev", 16, &out); err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":0.000,"input_length":48,"output_length":1,"hash_ids":[0,1,2]}
{"timestamp":500.000,"input_length":80,"output_length":1,"hash_ids":[0,1,3,4,5]}
{"timestamp":500.000,"input_length":16,"output_length":1,"hash_ids":[6]}
{"timestamp":500.000,"input_length":48,"output_length":1,"hash_ids":[0,1,2]}
{"timestamp":2000.000,"input_length":48,"output_length":1,"hash_ids":[0,1,2]}
`
	// 1: [1,2,3] on GPU (the CPU store is no request). 2: [4,5] continues
	// block 2 (its chain 1,2 as prefix) and [6] extends it; [7] has no
	// parent: a request of its own. 3: instance 1, ts earlier than the
	// last: kept at 500 ms. 4: a removal, no request.
	// 5: block 3 stored again after its removal: a recomputation.
	if got := out.String(); got != want {
		t.Errorf("requests:\n%s\nwant:\n%s", got, want)
	}
}

// TestToTraceBadInput: not a log, and a corrupt record, each one error
// naming the file and a byte offset.
func TestToTraceBadInput(t *testing.T) {
	if err := ToTrace(strings.NewReader(`{"timestamp":0}`), "x.jsonl", 16, &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "x.jsonl") || !strings.Contains(err.Error(), "at byte 0") {
		t.Errorf("not a log: %v", err)
	}
	log := handLog(t)
	if err := ToTrace(bytes.NewReader(log), "hand.kvev", 32, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "block_size 16, but block_tokens is 32") {
		t.Errorf("block size: %v", err)
	}
	log[len(log)-3] ^= 0xff // inside the last record's body
	err := ToTrace(bytes.NewReader(log), "bad.kvev", 16, &bytes.Buffer{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bad.kvev") || !strings.Contains(err.Error(), "record at byte ") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("corrupt record: %v", err)
	}
}

// FuzzToTrace: any bytes give an error or JSONL lines whose lengths are
// positive, and the same bytes give the same output.
func FuzzToTrace(f *testing.F) {
	if b, err := os.ReadFile("../trace/testdata/kvevents_tiny.kvev"); err == nil {
		f.Add(b) // the hand-made log, as TestToTraceHandMade keeps it
	}
	f.Add([]byte(logMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		var a, b bytes.Buffer
		errA := ToTrace(bytes.NewReader(data), "f", 16, &a)
		errB := ToTrace(bytes.NewReader(data), "f", 16, &b)
		if (errA == nil) != (errB == nil) || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("not deterministic")
		}
		if errA != nil {
			return
		}
		for _, line := range strings.Split(strings.TrimSuffix(a.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			var r struct {
				Timestamp float64 `json:"timestamp"`
				In        int64   `json:"input_length"`
				Out       int64   `json:"output_length"`
				IDs       []int64 `json:"hash_ids"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.In <= 0 || r.Out != 1 || len(r.IDs) == 0 || r.Timestamp < 0 {
				t.Fatalf("bad line %q: %v", line, err)
			}
		}
	})
}

// A BlockStored with every block's tokens gives its request's line
// token_ids, up to the first block no event gave tokens for.
func TestToTraceTokenIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tok.kvev")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	evs := []Event{
		{Kind: Stored, Hashes: []uint64{1, 2}, TokenIDs: []int64{10, 11, 12, 13}, BlockSize: 2, GroupIdx: -1},
		{Kind: Stored, Hashes: []uint64{3}, Parent: 2, HasParent: true, BlockSize: 2, GroupIdx: -1},                       // no tokens
		{Kind: Stored, Hashes: []uint64{4}, Parent: 2, HasParent: true, TokenIDs: []int64{1}, BlockSize: 2, GroupIdx: -1}, // too few: none kept
	}
	for i, ev := range evs {
		p, err := Encode(&Batch{TS: float64(i), Rank: -1, Events: []Event{ev}}, EncMap)
		if err != nil {
			t.Fatal(err)
		}
		w.Append(&Record{Type: RecFrame, Rank: -1, Seq: uint64(i), Payload: p})
	}
	w.Close()
	f, _ := os.Open(path)
	defer f.Close()
	var out bytes.Buffer
	if err := ToTrace(f, path, 2, &out); err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":0.000,"input_length":4,"output_length":1,"hash_ids":[0,1],"token_ids":[10,11,12,13]}
{"timestamp":1000.000,"input_length":6,"output_length":1,"hash_ids":[0,1,2],"token_ids":[10,11,12,13]}
{"timestamp":2000.000,"input_length":6,"output_length":1,"hash_ids":[0,1,3],"token_ids":[10,11,12,13]}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
