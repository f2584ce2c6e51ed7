// Package events reads and writes the KV-cache events that serving engines
// publish (vLLM, SGLang, Mooncake Store), records them to a checksummed
// log, and summarises a log.
package events

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// Kind is what an event says happened to blocks.
type Kind uint8

const (
	KindUnknown Kind = iota
	Stored
	Removed
	Cleared
)

func (k Kind) String() string {
	switch k {
	case Stored:
		return "BlockStored"
	case Removed:
		return "BlockRemoved"
	case Cleared:
		return "AllBlocksCleared"
	}
	return "unknown"
}

// Encoding says how a batch's events were laid out on the wire.
type Encoding uint8

const (
	// EncMap: each event a map tagged by "type" (vLLM since the switch to
	// tagged maps, SGLang).
	EncMap Encoding = iota
	// EncArray: each event an array whose first element is its tag (vLLM
	// before the switch).
	EncArray
	// EncMooncake: Mooncake Store's events (maps with "event_type", or
	// arrays tagged BlockStoreEvent / BlockUpdateEvent / RemoveAllEvent).
	EncMooncake
)

func (e Encoding) String() string {
	switch e {
	case EncMap:
		return "map"
	case EncArray:
		return "array"
	case EncMooncake:
		return "mooncake"
	}
	return "unknown"
}

// Event is one decoded event. Hashes are normalised to 64 bits (see
// HashOf) so that engines' int, bytes and string keys compare alike.
type Event struct {
	Kind      Kind
	Hashes    []uint64
	Parent    uint64
	HasParent bool
	TokenIDs  []int64
	BlockSize int64
	// Medium is "GPU", "CPU", "STORAGE" or whatever the engine said; empty
	// when absent (vLLM then means GPU).
	Medium   string
	LoraID   int64
	HasLora  bool
	LoraName string
	// GroupIdx is -1 when absent.
	GroupIdx      int64
	SpecKind      string
	SlidingWindow int64
	// SGLang's and Mooncake's additions.
	CacheSalt string
	SessionID string
	TenantID  string
}

// Batch is one decoded payload.
type Batch struct {
	TS       float64 // seconds since the epoch (Mooncake's milliseconds are converted)
	Rank     int64   // data-parallel rank, -1 when absent
	Encoding Encoding
	Events   []Event
}

// MediumOrGPU is the event's medium with vLLM's default filled in.
func (e *Event) MediumOrGPU() string {
	if e.Medium == "" {
		return "GPU"
	}
	return e.Medium
}

// HashOf maps a block key as engines send it to 64 bits: an integer is
// taken as its two's-complement bits (vLLM's hashes exceed int64 and some
// encoders write them signed); up to 8 bytes are read big-endian; longer
// bytes and strings (Mooncake's object keys) are FNV-1a hashed.
func HashOf(v any) (uint64, bool) {
	switch x := v.(type) {
	case int64:
		return uint64(x), true
	case uint64:
		return x, true
	case []byte:
		if len(x) <= 8 {
			var h uint64
			for _, b := range x {
				h = h<<8 | uint64(b)
			}
			return h, true
		}
		return fnv64(x), true
	case string:
		return fnv64([]byte(x)), true
	}
	return 0, false
}

func fnv64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// ErrMalformed wraps every decoding failure: the recorder counts and skips
// such frames.
var ErrMalformed = errors.New("malformed event batch")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Decode reads one payload: vLLM's or SGLang's EventBatch
// [ts, events, rank?] (or the same as a map), events as tagged maps or
// tagged arrays, or Mooncake Store's batch.
func Decode(payload []byte) (*Batch, error) {
	if err := checkShape(payload); err != nil {
		return nil, malformed("%v", err)
	}
	d := msgpack.NewDecoder(bytes.NewReader(payload))
	d.UseLooseInterfaceDecoding(true)
	v, err := d.DecodeInterfaceLoose()
	if err != nil {
		return nil, malformed("%v", err)
	}
	if _, err := d.PeekCode(); err == nil {
		return nil, malformed("trailing bytes after the batch")
	}
	var ts, rank, evs any
	switch b := v.(type) {
	case []any:
		if len(b) < 2 || len(b) > 3 {
			return nil, malformed("batch has %d elements, want 2 or 3", len(b))
		}
		ts, evs = b[0], b[1]
		if len(b) == 3 {
			rank = b[2]
		}
	case map[string]any:
		ts, evs, rank = b["ts"], b["events"], b["data_parallel_rank"]
		if ts == nil || evs == nil {
			return nil, malformed("batch map lacks ts or events")
		}
	default:
		return nil, malformed("batch is a %T, want an array", v)
	}
	out := &Batch{Rank: -1}
	f, ok := num(ts)
	if !ok {
		return nil, malformed("batch ts is a %T", ts)
	}
	out.TS = f
	if rank != nil {
		r, ok := integer(rank)
		if !ok {
			return nil, malformed("data_parallel_rank is a %T", rank)
		}
		out.Rank = r
	}
	list, ok := evs.([]any)
	if !ok {
		return nil, malformed("events is a %T, want an array", evs)
	}
	out.Events = make([]Event, 0, len(list))
	mooncake := false
	for i, e := range list {
		ev, enc, err := decodeEvent(e)
		if err != nil {
			return nil, malformed("event %d: %v", i, err)
		}
		if i == 0 {
			out.Encoding = enc
		}
		mooncake = mooncake || enc == EncMooncake
		out.Events = append(out.Events, ev)
	}
	if mooncake {
		out.Encoding = EncMooncake
		// Mooncake Store stamps batches in milliseconds.
		if out.TS > 1e11 {
			out.TS /= 1000
		}
	}
	return out, nil
}

func decodeEvent(v any) (Event, Encoding, error) {
	switch e := v.(type) {
	case map[string]any:
		if t, ok := e["type"].(string); ok {
			ev, err := fromMap(t, e)
			return ev, EncMap, err
		}
		if t, ok := e["event_type"].(string); ok {
			ev, err := fromMooncakeMap(t, e)
			return ev, EncMooncake, err
		}
		return Event{}, EncMap, errors.New("map event has no type")
	case []any:
		if len(e) == 0 {
			return Event{}, EncArray, errors.New("empty event array")
		}
		t, ok := e[0].(string)
		if !ok {
			return Event{}, EncArray, fmt.Errorf("event tag is a %T", e[0])
		}
		switch t {
		case "BlockStoreEvent", "BlockUpdateEvent", "RemoveAllEvent":
			ev, err := fromMooncakeArray(t, e)
			return ev, EncMooncake, err
		}
		ev, err := fromArray(t, e)
		return ev, EncArray, err
	}
	return Event{}, EncMap, fmt.Errorf("event is a %T", v)
}

func kindOf(tag string) (Kind, error) {
	switch tag {
	case "BlockStored":
		return Stored, nil
	case "BlockRemoved":
		return Removed, nil
	case "AllBlocksCleared":
		return Cleared, nil
	}
	return KindUnknown, fmt.Errorf("unknown event type %q", tag)
}

// vLLM's positional orders, as its structs declare the fields.
var (
	storedFields  = []string{"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"}
	removedFields = []string{"block_hashes", "medium", "group_idx"}
)

func fromArray(tag string, a []any) (Event, error) {
	k, err := kindOf(tag)
	if err != nil {
		return Event{}, err
	}
	m := map[string]any{}
	var names []string
	switch k {
	case Stored:
		names = storedFields
	case Removed:
		names = removedFields
	}
	for i, v := range a[1:] {
		if i < len(names) {
			m[names[i]] = v
		}
	}
	return fromMap(tag, m)
}

func fromMap(tag string, m map[string]any) (Event, error) {
	k, err := kindOf(tag)
	if err != nil {
		return Event{}, err
	}
	ev := Event{Kind: k, GroupIdx: -1}
	if k == Cleared {
		return ev, nil
	}
	hs, ok := m["block_hashes"].([]any)
	if !ok {
		return ev, fmt.Errorf("%s: block_hashes is a %T", tag, m["block_hashes"])
	}
	ev.Hashes = make([]uint64, len(hs))
	for i, h := range hs {
		if ev.Hashes[i], ok = HashOf(h); !ok {
			return ev, fmt.Errorf("%s: block_hashes[%d] is a %T", tag, i, h)
		}
	}
	if ev.Medium, err = optString(m, "medium"); err != nil {
		return ev, err
	}
	if g, ok, err := optInt(m, "group_idx"); err != nil {
		return ev, err
	} else if ok {
		ev.GroupIdx = g
	}
	if k == Removed {
		return ev, nil
	}
	if p := m["parent_block_hash"]; p != nil {
		if ev.Parent, ok = HashOf(p); !ok {
			return ev, fmt.Errorf("parent_block_hash is a %T", p)
		}
		ev.HasParent = true
	}
	if t := m["token_ids"]; t != nil {
		ts, ok := t.([]any)
		if !ok {
			return ev, fmt.Errorf("token_ids is a %T", t)
		}
		ev.TokenIDs = make([]int64, len(ts))
		for i, x := range ts {
			if ev.TokenIDs[i], ok = integer(x); !ok {
				return ev, fmt.Errorf("token_ids[%d] is a %T", i, x)
			}
		}
	}
	if ev.BlockSize, _, err = optInt(m, "block_size"); err != nil {
		return ev, err
	}
	if ev.LoraID, ev.HasLora, err = optInt(m, "lora_id"); err != nil {
		return ev, err
	}
	for _, f := range []struct {
		dst *string
		key string
	}{{&ev.LoraName, "lora_name"}, {&ev.SpecKind, "kv_cache_spec_kind"}, {&ev.CacheSalt, "cache_salt"}, {&ev.SessionID, "session_id"}} {
		if *f.dst, err = optString(m, f.key); err != nil {
			return ev, err
		}
	}
	if ev.SlidingWindow, _, err = optInt(m, "kv_cache_spec_sliding_window"); err != nil {
		return ev, err
	}
	return ev, nil
}

// Mooncake Store: stored, removed and cleared by object key.
func fromMooncakeMap(tag string, m map[string]any) (Event, error) {
	ev := Event{GroupIdx: -1}
	switch tag {
	case "stored", "BlockStoreEvent", "BlockStored", "put":
		ev.Kind = Stored
	case "removed", "BlockRemoved", "remove", "evicted":
		ev.Kind = Removed
	case "cleared", "RemoveAllEvent", "AllBlocksCleared":
		ev.Kind = Cleared
		return ev, nil
	default:
		return ev, fmt.Errorf("unknown Mooncake event_type %q", tag)
	}
	key := m["object_key"]
	if key == nil {
		key = m["mooncake_key"]
	}
	h, ok := HashOf(key)
	if !ok {
		return ev, fmt.Errorf("object_key is a %T", key)
	}
	ev.Hashes = []uint64{h}
	var err error
	if ev.Medium, err = optString(m, "medium"); err != nil {
		return ev, err
	}
	if ev.TenantID, err = optString(m, "tenant_id"); err != nil {
		return ev, err
	}
	return ev, nil
}

func fromMooncakeArray(tag string, a []any) (Event, error) {
	ev := Event{GroupIdx: -1}
	switch tag {
	case "RemoveAllEvent":
		ev.Kind = Cleared
		return ev, nil
	case "BlockStoreEvent", "BlockUpdateEvent":
		// An update moves replicas; the key stays resident, so it reads as
		// a store of an already stored block.
		ev.Kind = Stored
	}
	if len(a) < 2 {
		return ev, fmt.Errorf("%s has no key", tag)
	}
	h, ok := HashOf(a[1])
	if !ok {
		return ev, fmt.Errorf("%s key is a %T", tag, a[1])
	}
	ev.Hashes = []uint64{h}
	if len(a) > 4 {
		ev.BlockSize, _ = integer(a[4])
	}
	return ev, nil
}

func optString(m map[string]any, key string) (string, error) {
	v := m[key]
	if v == nil {
		return "", nil
	}
	switch s := v.(type) {
	case string:
		return s, nil
	case []byte:
		return string(s), nil
	}
	return "", fmt.Errorf("%s is a %T", key, v)
}

func optInt(m map[string]any, key string) (int64, bool, error) {
	v := m[key]
	if v == nil {
		return 0, false, nil
	}
	i, ok := integer(v)
	if !ok {
		return 0, false, fmt.Errorf("%s is a %T", key, v)
	}
	return i, true, nil
}

func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	}
	return 0, false
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return x, true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}
