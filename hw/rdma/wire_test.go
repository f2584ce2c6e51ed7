package rdma

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func goldenPeer() Peer {
	p := Peer{Endpoint: Endpoint{QPN: 0x000123, PSN: 0xabcdef, LID: 7, Port: 1, MTU: 5}}
	p.GID[0], p.GID[1], p.GID[15] = 0xfe, 0x80, 0x01
	p.MRs = []RemoteMR{{Addr: 0x7f0000000000, Len: 1 << 30, RKey: 0x8001}, {Addr: 0x7f0040000000, Len: 4096, RKey: 0x8002}}
	return p
}

// goldenHex is goldenPeer's message: a change here is a wire format
// change, which needs a new version.
const goldenHex = "4b5652440001" + "00000046" + // "KVRD", version 1, 70 body bytes
	"00000123" + "00abcdef" + "0007" + "01" + "05" + // qpn, psn, lid, port, mtu
	"fe800000000000000000000000000001" + "0002" + // gid, 2 regions
	"00007f0000000000" + "0000000040000000" + "00008001" +
	"00007f0040000000" + "0000000000001000" + "00008002"

func TestWireGolden(t *testing.T) {
	b, err := AppendPeer(nil, goldenPeer())
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != goldenHex {
		t.Fatalf("encoding\n got %s\nwant %s", got, goldenHex)
	}
	p, err := DecodePeer(b)
	if err != nil || !reflect.DeepEqual(p, goldenPeer()) {
		t.Fatalf("decode: %+v %v", p, err)
	}
	q, err := readPeer(bytes.NewReader(append(b, "R"...)))
	if err != nil || !reflect.DeepEqual(q, goldenPeer()) {
		t.Fatalf("readPeer: %+v %v", q, err)
	}
}

func TestWireRefuses(t *testing.T) {
	good, _ := hex.DecodeString(goldenHex)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"short":       {good[:5], "shorter than the 10-byte header"},
		"magic":       {mod(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		"version":     {mod(func(b []byte) []byte { b[5] = 2; return b }), "version 2, this kvsim speaks 1"},
		"huge length": {mod(func(b []byte) []byte { b[6] = 0x7f; return b }), "outside"},
		"truncated":   {good[:len(good)-1], "header says 70 body bytes, message has 69"},
		"trailing":    {append(bytes.Clone(good), 0), "header says 70 body bytes, message has 71"},
		"count":       {mod(func(b []byte) []byte { b[wireHeader+29] = 3; return b }), "3 memory regions need 90 body bytes, not 70"},
		"qpn":         {mod(func(b []byte) []byte { b[wireHeader] = 1; return b }), "beyond 24 bits"},
		"mtu":         {mod(func(b []byte) []byte { b[wireHeader+11] = 6; return b }), "MTU code 6"},
		"port":        {mod(func(b []byte) []byte { b[wireHeader+10] = 0; return b }), "port 0"},
		"empty MR":    {mod(func(b []byte) []byte { copy(b[wireHeader+wireFixed+8:], make([]byte, 8)); return b }), "empty or wraps"},
		"overlap":     {mod(func(b []byte) []byte { b[wireHeader+wireFixed+wireMR+4] = 0; return b }), "overlaps or precedes"},
	} {
		_, err := DecodePeer(c.b)
		if !errors.Is(err, ErrWire) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := AppendPeer(nil, Peer{Endpoint: Endpoint{Port: 1, MTU: 5}, MRs: make([]RemoteMR, maxWireMRs+1)}); !errors.Is(err, ErrWire) {
		t.Errorf("too many regions encoded: %v", err)
	}
	// A stranger announcing a huge body is refused before it is read.
	if _, err := readPeer(bytes.NewReader(mod(func(b []byte) []byte { b[6] = 0x7f; return b[:wireHeader] }))); !errors.Is(err, ErrWire) {
		t.Errorf("huge body: %v", err)
	}
}

// FuzzDecodePeer: the decoder never panics, and what it accepts encodes
// back to the same bytes (one encoding per message).
func FuzzDecodePeer(f *testing.F) {
	good, _ := hex.DecodeString(goldenHex)
	f.Add(good)
	f.Add(good[:wireHeader+wireFixed])
	f.Add([]byte("KVRD\x00\x01\x00\x00\x00\x1e"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePeer(b)
		if err != nil {
			if !errors.Is(err, ErrWire) {
				t.Fatalf("error not ErrWire: %v", err)
			}
			return
		}
		again, err := AppendPeer(nil, p)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, re-encodes as %x (%v)", b, again, err)
		}
	})
}
