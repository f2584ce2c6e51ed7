package results

import (
	"bytes"
	"path/filepath"
	"testing"
)

func sampleEvents() *EventLog {
	return &EventLog{
		Header: EventsHeader{RunID: "abc", Tiers: []string{"hbm", "dram"}, Links: []string{"hbm->dram", "dram->hbm"},
			BytesPerToken: 1000, BlockTokens: 1000, Policies: []EventsPolicy{{Name: "lru", Max: 10}, {Name: "fifo", Max: 10, Dropped: 3}}},
		Events: [][]Event{
			{{Time: 1, Seq: 0, Block: -1, A: 2000, B: 1, Kind: 1}, {Time: 2, Seq: -1, Block: 7, A: 1e6, Kind: 3, From: 1, To: 0}},
			{{Time: 5, Seq: 3, Block: 9, Kind: 5, From: -1, To: 0, Aux: 255}},
		},
	}
}

func TestEventsRoundTrip(t *testing.T) {
	l := sampleEvents()
	b, err := AppendEvents(nil, l)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseEvents(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 || len(got.Events[0]) != 2 || got.Events[1][0] != l.Events[1][0] || got.Events[0][1] != l.Events[0][1] {
		t.Errorf("round trip: %+v", got.Events)
	}
	if got.Header.Policies[1].Dropped != 3 || got.Header.Policies[0].Events != 2 {
		t.Errorf("header: %+v", got.Header.Policies)
	}
	p := filepath.Join(t.TempDir(), EventsFile)
	if err := WriteEvents(p, l); err != nil || !IsEvents(p) {
		t.Fatalf("write: %v", err)
	}
	for _, bad := range [][]byte{nil, []byte("KVSIMEV1"), b[:len(b)-1], append(bytes.Clone(b), make([]byte, EventSize)...)} {
		if _, err := ParseEvents(bad); err == nil {
			t.Errorf("%d bytes: no error", len(bad))
		}
	}
}

// FuzzParseEvents: whatever the bytes, ParseEvents returns an error or a
// log that encodes back to the same bytes' records, and never panics or
// allocates past what the input holds.
func FuzzParseEvents(f *testing.F) {
	b, err := AppendEvents(nil, sampleEvents())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("KVSIMEV1\x02\x00\x00\x00{}"))
	f.Add([]byte("KVSIMEV1\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseEvents(data)
		if err != nil {
			return
		}
		var n int
		for _, es := range l.Events {
			n += len(es)
		}
		if n*EventSize > len(data) {
			t.Fatalf("%d events from %d bytes", n, len(data))
		}
		again, err := AppendEvents(nil, l)
		if err != nil {
			t.Fatal(err)
		}
		l2, err := ParseEvents(again)
		if err != nil {
			t.Fatalf("re-encoded log does not parse: %v", err)
		}
		if len(l2.Events) != len(l.Events) {
			t.Fatal("re-encoded log differs")
		}
	})
}
