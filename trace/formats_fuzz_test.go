package trace

import (
	"bytes"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkFormat reads data in a format with and without SkipBadLines and
// checks what any input must satisfy: no panic, every error a one-line
// *LineError on an existing line, requests in range.
func checkFormat(t *testing.T, data []byte, opt Options) string {
	t.Helper()
	lines := bytes.Count(data, []byte("\n")) + 1
	var out string
	for _, skip := range []bool{false, true} {
		opt.SkipBadLines = skip
		r := NewReader(bytes.NewReader(data), "fuzz.jsonl", opt)
		var q Request
		last := int64(0)
		for {
			err := r.Next(&q)
			if err == io.EOF {
				break
			}
			if err != nil {
				checkErr(t, err, lines)
				break
			}
			if q.Arrival < last || q.Arrival > MaxArrival || q.InputTokens > MaxTokens || q.OutputTokens > MaxTokens ||
				q.Line < 1 || q.Line > lines || q.Parent < 0 || q.Parent >= q.Line || q.Think < 0 {
				t.Fatalf("%q: out of range: %+v", data, q)
			}
			if opt.Format == "azure" || opt.Format == "burstgpt" {
				if len(q.HashIDs) != 0 {
					t.Fatalf("ids from a CSV trace: %v", q.HashIDs)
				}
			} else if len(q.HashIDs) != numBlocks(q.InputTokens, r.opt.BlockTokens) {
				t.Fatalf("%q: %d ids for %d tokens", data, len(q.HashIDs), q.InputTokens)
			}
			last = q.Arrival
		}
		if r.Skipped() > 0 {
			checkErr(t, r.FirstSkipped(), lines)
		}
		if !skip {
			r.Rewind()
			out = dump(r)
		}
	}
	return out
}

// checkBinary converts data and, when that succeeds, reads the binary
// form: it must give what the source gives.
func checkBinary(t *testing.T, data []byte, opt Options) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "fuzz.jsonl")
	os.WriteFile(src, data, 0o644)
	bin := filepath.Join(dir, "b.kvtc")
	if err := Convert(src, bin, opt); err != nil {
		var le *LineError
		if !errors.As(err, &le) {
			t.Fatalf("convert: %v", err)
		}
		return
	}
	o := opt
	if o.BlockTokens <= 0 {
		o.BlockTokens = DefaultBlockTokens
	}
	r, err := openBinaryReader(bin, src, o, true)
	if err != nil {
		t.Fatal(err)
	}
	got := dump(r)
	r.Close()
	if want := dumpFile(t, src, opt); got != want {
		t.Fatalf("%q: binary:\n%s\nsource:\n%s", data, got, want)
	}
}

var formatSeeds = []struct{ format, data string }{
	{"bailian", `{"chat_id": 1, "parent_chat_id": -1, "timestamp": 1.5, "input_length": 17, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [5, 5]}` + "\n" +
		`{"chat_id": 2, "parent_chat_id": 1, "timestamp": 2, "input_length": 1, "output_length": 1, "hash_ids": [5]}`},
	{"bailian", `{"chat_id": 9223372036854775808, "timestamp": -1, "input_length": 0, "output_length": 0, "hash_ids": []}`},
	{"azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,4808,10\n2023-11-16 18:15:47,1,\"2\"\n"},
	{"azure", "ContextTokens,TIMESTAMP,GeneratedTokens\r\n1,2024-05-10 00:00:00.009930+00:00,2\r\n1,2024-02-30 00:00:00,2\n"},
	{"burstgpt", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n4.5,x,1.0,2,3,y\n"},
	{"burstgpt", "\"Timestamp\",\"Request tokens\",\"Response tokens\"\n\"1e3\",\"a,b\",3\n"},
	{"mooncake", `{"timestamp": 5, "input_length": 1, "output_length": 2, "hash_ids": [7], "session_id": "s1", "delay": 2.5}` + "\n" +
		`{"timestamp": 6, "input_length": 1, "output_length": 2, "hash_ids": [7], "session_id": "s1"}`},
}

func fuzzFormat(f *testing.F, format string) {
	for _, s := range formatSeeds {
		if s.format == format {
			f.Add([]byte(s.data), uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, bt uint8) {
		opt := Options{Format: format, BlockTokens: 16 * (1 + int(bt%4))}
		if format == "mooncake" {
			opt.BlockTokens = 1 + int(bt%8)
		}
		checkFormat(t, data, opt)
		checkBinary(t, data, opt)
	})
}

func FuzzBailian(f *testing.F)  { fuzzFormat(f, "bailian") }
func FuzzAzure(f *testing.F)    { fuzzFormat(f, "azure") }
func FuzzBurstGPT(f *testing.F) { fuzzFormat(f, "burstgpt") }

// FuzzMooncakeBinary: the mooncake reader's binary form, with sessions.
func FuzzMooncakeBinary(f *testing.F) { fuzzFormat(f, "mooncake") }

// FuzzBinaryReader feeds the binary reader bodies that pass the checksums:
// an error or requests, never a panic or a hang.
func FuzzBinaryReader(f *testing.F) {
	bin := filepath.Join(f.TempDir(), "s.kvtc")
	if err := Convert("testdata/mooncake_sessions.jsonl", bin, Options{}); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(bin)
	h, _ := decodeHeader(good)
	f.Add(good[hdrSize:], uint16(h.recLen), uint8(h.distinct), uint8(h.sessions), uint8(0))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 1, 0, 2}, uint16(9), uint8(1), uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, body []byte, recLen uint16, distinct, sessions, format uint8) {
		h := binHeader{format: int(format % 4), recLen: uint64(min(int(recLen), len(body))), distinct: uint64(distinct), sessions: uint64(sessions)}
		h.tabLen = uint64(len(body)) - h.recLen
		h.refs, h.records = h.recLen, h.recLen
		h.bodyCRC = crc32.Checksum(body, castagnoli)
		data := append(h.encode(), body...)
		b, err := newBinSource(data)
		if err != nil {
			return
		}
		opt := Options{Format: formats[h.format].Name, BlockTokens: 16}
		r := NewReader(nil, "fuzz", opt)
		r.br, r.bin = nil, b
		var q Request
		for i := 0; ; i++ {
			err := r.Next(&q)
			if err == io.EOF {
				break
			}
			if err != nil {
				if strings.ContainsAny(err.Error(), "\n") {
					t.Fatalf("multi-line error %q", err)
				}
				break
			}
			if i > len(body) {
				t.Fatal("more requests than bytes")
			}
		}
	})
}

// TestFormatSeeds runs the fuzz checks over the seeds without fuzzing.
func TestFormatSeeds(t *testing.T) {
	for _, s := range formatSeeds {
		for _, bt := range []int{16, 32} {
			opt := Options{Format: s.format, BlockTokens: bt}
			checkFormat(t, []byte(s.data), opt)
			checkBinary(t, []byte(s.data), opt)
		}
	}
	// The header's own fields are unreadable without its checksum.
	var h binHeader
	b := h.encode()
	b[9] = 1
	if _, err := decodeHeader(b); err == nil {
		t.Error("a header with a bad checksum decoded")
	}
}
