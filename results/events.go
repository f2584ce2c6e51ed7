package results

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"kvsim/internal/atomicfile"
)

// EventsFile is the per-event log kvsim run --trace-events writes beside a
// results folder's set (docs/explain.md). It is written after the set, whole
// (a temporary file renamed into place), and carries the run's run_id:
// a log beside a summary.json of another run (a kill between the two, or a
// later run without the flag) is told by kvsim explain, never read as this
// run's.
const EventsFile = "events.bin"

// eventsMagic opens an events file; the version is its last byte.
const eventsMagic = "KVSIMEV1"

// EventSize is the bytes of one record: five int64 and four bytes.
const EventSize = 44

// maxEventsHeader bounds the JSON header a reader accepts.
const maxEventsHeader = 1 << 20

// Event is one record of the log (the fields' meaning is sim.Event's).
type Event struct {
	Time, Seq, Block, A, B int64
	Kind                   uint8
	From, To               int8
	Aux                    uint8
}

// EventsPolicy is one policy's share of the log: its events follow the
// previous policy's, in the order they were recorded.
type EventsPolicy struct {
	Name    string `json:"name"`
	Events  int64  `json:"events"`
	Dropped int64  `json:"dropped"` // events past the cap, not kept
	Max     int    `json:"max"`     // the cap
	// Instances, in a [cluster] run, are the records of each instance in
	// turn (instance 0's first): they add up to Events. The instances
	// shared the cap, so the log covers the run's start on all of them.
	Instances []int64 `json:"instances,omitempty"`
}

// EventsHeader describes the log.
type EventsHeader struct {
	RunID         string         `json:"run_id"`
	Tiers         []string       `json:"tiers"`
	Links         []string       `json:"links"`           // by link index (Event.Aux of a hop)
	LinkLatency   []int64        `json:"link_latency_ns"` // by link index
	BytesPerToken int64          `json:"bytes_per_token"`
	BlockTokens   int            `json:"block_tokens"`
	Policies      []EventsPolicy `json:"policies"`
	// Prefill, in a disaggregated [cluster] run, is how many of the
	// instances (the first ones) prefill; the others decode.
	Prefill int `json:"prefill,omitempty"`
}

// EventLog is a whole events file: Events[i] are policy i's.
type EventLog struct {
	Header EventsHeader
	Events [][]Event
}

// InstanceCount is how many instances policy pi's log covers: 1 unless a
// [cluster] run's.
func (l *EventLog) InstanceCount(pi int) int {
	if n := len(l.Header.Policies[pi].Instances); n > 0 {
		return n
	}
	return 1
}

// InstanceEvents are instance inst's records in policy pi's log (all of
// them in a log of one instance).
func (l *EventLog) InstanceEvents(pi, inst int) []Event {
	counts := l.Header.Policies[pi].Instances
	if len(counts) == 0 {
		return l.Events[pi]
	}
	var at int64
	for _, c := range counts[:inst] {
		at += c
	}
	return l.Events[pi][at : at+counts[inst]]
}

// AppendEvents encodes l.
func AppendEvents(buf []byte, l *EventLog) ([]byte, error) {
	h := l.Header
	if len(h.Policies) != len(l.Events) {
		return nil, errors.New("events: a header entry per policy needed")
	}
	for i := range h.Policies {
		h.Policies[i].Events = int64(len(l.Events[i]))
		if err := checkInstances(h.Policies[i]); err != nil {
			return nil, err
		}
	}
	js, err := json.Marshal(&h)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, es := range l.Events {
		n += len(es)
	}
	buf = slices.Grow(buf, len(eventsMagic)+4+len(js)+n*EventSize) // one allocation: a log is tens of MB
	buf = append(buf, eventsMagic...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(js)))
	buf = append(buf, js...)
	for _, es := range l.Events {
		for _, e := range es {
			for _, v := range [5]int64{e.Time, e.Seq, e.Block, e.A, e.B} {
				buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
			}
			buf = append(buf, e.Kind, byte(e.From), byte(e.To), e.Aux)
		}
	}
	return buf, nil
}

// ParseEvents decodes an events file, checking every count against the
// bytes there are.
func ParseEvents(b []byte) (*EventLog, error) {
	if len(b) < len(eventsMagic)+4 || string(b[:len(eventsMagic)]) != eventsMagic {
		return nil, errors.New("not a kvsim events file")
	}
	b = b[len(eventsMagic):]
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if n > maxEventsHeader || int(n) > len(b) {
		return nil, errors.New("events: header truncated")
	}
	var l EventLog
	dec := json.NewDecoder(bytes.NewReader(b[:n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l.Header); err != nil {
		return nil, fmt.Errorf("events: header: %v", err)
	}
	b = b[n:]
	if len(b)%EventSize != 0 {
		return nil, errors.New("events: truncated record")
	}
	left := int64(len(b) / EventSize)
	for _, p := range l.Header.Policies {
		if p.Events < 0 || p.Events > left {
			return nil, fmt.Errorf("events: policy %q: %d events, %d in the file", p.Name, p.Events, left)
		}
		if err := checkInstances(p); err != nil {
			return nil, err
		}
		left -= p.Events
		es := make([]Event, p.Events)
		for i := range es {
			r := b[:EventSize]
			b = b[EventSize:]
			u := func(k int) int64 { return int64(binary.LittleEndian.Uint64(r[8*k:])) }
			es[i] = Event{Time: u(0), Seq: u(1), Block: u(2), A: u(3), B: u(4),
				Kind: r[40], From: int8(r[41]), To: int8(r[42]), Aux: r[43]}
		}
		l.Events = append(l.Events, es)
	}
	if left != 0 {
		return nil, fmt.Errorf("events: %d records no policy claims", left)
	}
	return &l, nil
}

// checkInstances checks that a policy's per-instance counts add up.
func checkInstances(p EventsPolicy) error {
	if len(p.Instances) == 0 {
		return nil
	}
	var sum int64
	for _, c := range p.Instances {
		if c < 0 || c > p.Events-sum {
			return fmt.Errorf("events: policy %q: its instances' counts do not add up to its %d events", p.Name, p.Events)
		}
		sum += c
	}
	if sum != p.Events {
		return fmt.Errorf("events: policy %q: its instances' counts do not add up to its %d events", p.Name, p.Events)
	}
	return nil
}

// EventsRunID is the run_id in the header of the events file at path, ""
// when it is not one (the records are not read).
func EventsRunID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, len(eventsMagic)+4)
	if _, err := io.ReadFull(f, b); err != nil || string(b[:len(eventsMagic)]) != eventsMagic {
		return ""
	}
	n := binary.LittleEndian.Uint32(b[len(eventsMagic):])
	if n > maxEventsHeader {
		return ""
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(f, js); err != nil {
		return ""
	}
	var h struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(js, &h) != nil {
		return ""
	}
	return h.RunID
}

// IsEvents reports whether path opens as an events file kvsim wrote.
func IsEvents(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(eventsMagic))
	_, err = f.Read(b)
	return err == nil && string(b) == eventsMagic
}

// WriteEvents replaces path with l whole, refusing a file kvsim did not write.
func WriteEvents(path string, l *EventLog) error {
	if ok, _ := Replaceable(path, IsEvents); !ok {
		return fmt.Errorf("%s %w", path, ErrNotOurs)
	}
	b, err := AppendEvents(nil, l)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}
