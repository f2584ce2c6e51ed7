package events

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// The batch quoted in kthena #1535 (vLLM 0.26.0, tagged maps) decodes.
func TestEventsKthenaFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/kthena1535.msgpack")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if batch.TS != 1789095808.8378847 || batch.Rank != 0 || batch.Encoding != EncMap || len(batch.Events) != 1 {
		t.Fatalf("batch = %+v", batch)
	}
	ev := batch.Events[0]
	if ev.Kind != Stored || len(ev.Hashes) != 1 || ev.Hashes[0] != 15760518052499183552 || ev.HasParent ||
		len(ev.TokenIDs) != 16 || ev.TokenIDs[0] != 151644 || ev.TokenIDs[15] != 151667 || ev.BlockSize != 16 ||
		ev.HasLora || ev.Medium != "GPU" || ev.GroupIdx != 0 || ev.SpecKind != "full_attention" {
		t.Fatalf("event = %+v", ev)
	}
}

func sample() *Batch {
	return &Batch{TS: 12.5, Rank: 1, Events: []Event{
		{Kind: Stored, Hashes: []uint64{1, 1 << 63, 42}, Parent: 7, HasParent: true, TokenIDs: []int64{1, 2, 3}, BlockSize: 16, Medium: "CPU", GroupIdx: -1},
		{Kind: Stored, Hashes: []uint64{9}, TokenIDs: []int64{}, BlockSize: 16, LoraID: 3, HasLora: true, LoraName: "a", GroupIdx: 2, SpecKind: "sliding_window", SlidingWindow: 128},
		{Kind: Removed, Hashes: []uint64{1}, Medium: "GPU", GroupIdx: -1},
		{Kind: Removed, Hashes: []uint64{42}, GroupIdx: 0},
		{Kind: Cleared, GroupIdx: -1},
	}}
}

// Both of vLLM's layouts round-trip through Encode and Decode.
func TestEventsRoundTrip(t *testing.T) {
	for _, enc := range []Encoding{EncMap, EncArray} {
		want := sample()
		p, err := Encode(want, enc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(p)
		if err != nil {
			t.Fatalf("%v: %v", enc, err)
		}
		want.Encoding = enc
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v:\n got %+v\nwant %+v", enc, got, want)
		}
	}
}

// Hashes arrive as uint64, as signed int64 (some encoders), or as bytes.
func TestEventsHashForms(t *testing.T) {
	for _, c := range []struct {
		v    any
		want uint64
	}{
		{int64(-1), ^uint64(0)},
		{uint64(5), 5},
		{[]byte{1, 2}, 0x0102},
	} {
		if h, ok := HashOf(c.v); !ok || h != c.want {
			t.Errorf("HashOf(%v) = %d, %v", c.v, h, ok)
		}
	}
}

// SGLang's additions and Mooncake Store's batches decode.
func TestEventsSGLangAndMooncake(t *testing.T) {
	sg, _ := msgpack.Marshal([]any{1.0, []any{map[string]any{
		"type": "BlockStored", "block_hashes": []any{int64(-5)}, "parent_block_hash": nil, "token_ids": []any{1},
		"block_size": 1, "lora_id": nil, "medium": "GPU", "lora_name": nil, "cache_salt": "s", "session_id": "x"}}})
	b, err := Decode(sg)
	if err != nil {
		t.Fatal(err)
	}
	if ev := b.Events[0]; ev.CacheSalt != "s" || ev.SessionID != "x" || ev.Hashes[0] != uint64(1<<64-5) || b.Rank != -1 {
		t.Fatalf("%+v", b)
	}
	mc, _ := msgpack.Marshal([]any{1700000000123, []any{
		map[string]any{"event_type": "stored", "object_key": "k1", "medium": "DRAM", "tenant_id": "t"},
		map[string]any{"event_type": "removed", "object_key": "k1", "medium": "DRAM"},
		[]any{"BlockStoreEvent", "k2", []any{[]any{"memory", "tcp://x"}}, "m", 512, "h", "p", []any{1}},
		[]any{"RemoveAllEvent"},
	}, 0})
	b, err = Decode(mc)
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := HashOf("k1")
	if b.Encoding != EncMooncake || b.TS != 1700000000.123 || b.Events[0].Kind != Stored || b.Events[0].Hashes[0] != k1 ||
		b.Events[0].TenantID != "t" || b.Events[1].Kind != Removed || b.Events[2].BlockSize != 512 || b.Events[3].Kind != Cleared {
		t.Fatalf("%+v", b)
	}
}

// Malformed payloads are errors that wrap ErrMalformed.
func TestEventsMalformed(t *testing.T) {
	enc := func(v any) []byte { b, _ := msgpack.Marshal(v); return b }
	for _, p := range [][]byte{
		nil, {0xc1}, enc(5), enc([]any{1.0}), enc([]any{"x", []any{}}), enc([]any{1.0, 3}),
		enc([]any{1.0, []any{[]any{"Nope"}}}), enc([]any{1.0, []any{map[string]any{"type": "BlockStored", "block_hashes": "x"}}}),
		enc([]any{1.0, []any{[]any{"BlockRemoved", []any{1.5}}}}), append(enc([]any{1.0, []any{}}), 0),
	} {
		if _, err := Decode(p); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%x) = %v", p, err)
		}
	}
}

// No payload panics the decoder; what decodes re-encodes and decodes alike.
func FuzzDecode(f *testing.F) {
	fx, _ := os.ReadFile("testdata/kthena1535.msgpack")
	f.Add(fx)
	for _, enc := range []Encoding{EncMap, EncArray} {
		p, _ := Encode(sample(), enc)
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := Decode(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if b.Encoding == EncMooncake {
			return
		}
		q, err := Encode(b, EncMap)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := Decode(q)
		if err != nil {
			t.Fatalf("re-encoded batch does not decode: %v", err)
		}
		if len(b2.Events) != len(b.Events) || !bytes.Equal(q, mustEncode(t, b2)) {
			t.Fatalf("re-encoding is not stable")
		}
	})
}

func mustEncode(t *testing.T, b *Batch) []byte {
	q, err := Encode(b, EncMap)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
