package events

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// Encode writes b as vLLM does: an array [ts, events, rank] whose events
// are tagged maps (EncMap) or tagged arrays (EncArray). Fields that vLLM
// declares with a default are left out when absent, as its encoder does.
func Encode(b *Batch, enc Encoding) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	if err := AppendBatch(e, b, enc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// AppendBatch is Encode onto an encoder the caller reuses.
func AppendBatch(e *msgpack.Encoder, b *Batch, enc Encoding) error {
	n := 3
	if b.Rank < 0 {
		n = 2
	}
	w := &ew{e: e}
	w.arr(n)
	w.err = firstErr(w.err, e.EncodeFloat64(b.TS))
	w.arr(len(b.Events))
	for i := range b.Events {
		w.event(&b.Events[i], enc)
	}
	if n == 3 {
		w.int(b.Rank)
	}
	return w.err
}

type ew struct {
	e   *msgpack.Encoder
	err error
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (w *ew) arr(n int)     { w.err = firstErr(w.err, w.e.EncodeArrayLen(n)) }
func (w *ew) mp(n int)      { w.err = firstErr(w.err, w.e.EncodeMapLen(n)) }
func (w *ew) str(s string)  { w.err = firstErr(w.err, w.e.EncodeString(s)) }
func (w *ew) int(i int64)   { w.err = firstErr(w.err, w.e.EncodeInt(i)) }
func (w *ew) uint(u uint64) { w.err = firstErr(w.err, w.e.EncodeUint(u)) }
func (w *ew) nil()          { w.err = firstErr(w.err, w.e.EncodeNil()) }

func (w *ew) key(enc Encoding, k string) {
	if enc == EncMap {
		w.str(k)
	}
}

func (w *ew) optStr(s string) {
	if s == "" {
		w.nil()
	} else {
		w.str(s)
	}
}

func (w *ew) event(ev *Event, enc Encoding) {
	type field struct {
		name string
		put  func()
	}
	var fs []field
	switch ev.Kind {
	case Stored:
		fs = []field{
			{"block_hashes", func() { w.hashes(ev.Hashes) }},
			{"parent_block_hash", func() {
				if ev.HasParent {
					w.uint(ev.Parent)
				} else {
					w.nil()
				}
			}},
			{"token_ids", func() {
				w.arr(len(ev.TokenIDs))
				for _, t := range ev.TokenIDs {
					w.int(t)
				}
			}},
			{"block_size", func() { w.int(ev.BlockSize) }},
			{"lora_id", func() {
				if ev.HasLora {
					w.int(ev.LoraID)
				} else {
					w.nil()
				}
			}},
			{"medium", func() { w.optStr(ev.Medium) }},
			{"lora_name", func() { w.optStr(ev.LoraName) }},
		}
		// Defaulted fields: present only when set; in the array form a
		// later one forces the earlier ones out as nil.
		opt := []struct {
			name string
			set  bool
			put  func()
		}{
			{"extra_keys", false, nil},
			{"group_idx", ev.GroupIdx >= 0, func() { w.int(ev.GroupIdx) }},
			{"kv_cache_spec_kind", ev.SpecKind != "", func() { w.str(ev.SpecKind) }},
			{"kv_cache_spec_sliding_window", ev.SlidingWindow != 0, func() { w.int(ev.SlidingWindow) }},
		}
		last := -1
		for i, o := range opt {
			if o.set {
				last = i
			}
		}
		for i, o := range opt {
			if enc == EncMap && !o.set {
				continue
			}
			if enc != EncMap && i > last {
				break
			}
			put := o.put
			if !o.set {
				put = w.nil
			}
			fs = append(fs, field{o.name, put})
		}
	case Removed:
		fs = []field{
			{"block_hashes", func() { w.hashes(ev.Hashes) }},
			{"medium", func() { w.optStr(ev.Medium) }},
		}
		if ev.GroupIdx >= 0 {
			fs = append(fs, field{"group_idx", func() { w.int(ev.GroupIdx) }})
		}
	}
	if enc == EncMap {
		w.mp(len(fs) + 1)
		w.str("type")
	} else {
		w.arr(len(fs) + 1)
	}
	w.str(ev.Kind.String())
	for _, f := range fs {
		w.key(enc, f.name)
		f.put()
	}
}

func (w *ew) hashes(hs []uint64) {
	w.arr(len(hs))
	for _, h := range hs {
		w.uint(h)
	}
}
