package events

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Stats summarises a log.
type Stats struct {
	Records   int64 `json:"records"`
	Frames    int64 `json:"frames"`
	Replayed  int64 `json:"replayed_frames"`
	Malformed int64 `json:"malformed_frames"`
	// Gaps and GapSeqs: sequence ranges never received, and how many
	// sequence numbers they hold.
	Gaps      int64  `json:"gaps"`
	GapSeqs   uint64 `json:"gap_seqs"`
	Truncated bool   `json:"truncated_tail"`
	// Outages: connections to a source lost (the recorder redialled);
	// Epochs: sources whose sequence numbers started again (restarts).
	Outages int64 `json:"outages"`
	Epochs  int64 `json:"epochs"`
	Events  int64 `json:"events"`
	// ByType and ByMedium count events ("BlockStored" -> n; "GPU" -> n).
	ByType     map[string]int64 `json:"events_by_type"`
	ByMedium   map[string]int64 `json:"events_by_medium"`
	ByEncoding map[string]int64 `json:"frames_by_encoding"`
	Instances  []InstanceStats  `json:"instances"`
	// SharedHashes: block hashes stored on more than one instance (the
	// same content cached twice, or, for unrelated content, a collision).
	SharedHashes int64   `json:"hashes_on_several_instances"`
	FirstTS      float64 `json:"first_ts"`
	LastTS       float64 `json:"last_ts"`
}

// InstanceStats is one source's share.
type InstanceStats struct {
	Instance      uint32 `json:"instance"`
	Endpoint      string `json:"endpoint"`
	Frames        int64  `json:"frames"`
	BlocksStored  int64  `json:"blocks_stored"`
	BlocksRemoved int64  `json:"blocks_removed"`
	Clears        int64  `json:"clears"`
	Outages       int64  `json:"outages"`
	Epochs        int64  `json:"epochs"`
	// Restores counts stores of a hash this instance had removed from the
	// same medium: recomputation (or reload) a lower tier could have saved.
	Restores int64 `json:"restores_after_removal"`
	// Resident is what the stream says is cached at its end, per medium.
	Resident map[string]int64 `json:"resident_at_end"`
}

type tierKey struct {
	inst   uint32
	medium string
}

// Residency replays stored/removed/cleared into per-instance, per-medium
// sets of hashes: the state the stream describes.
type Residency struct {
	Sets    map[tierKey]map[uint64]struct{}
	removed map[tierKey]map[uint64]struct{}
}

// NewResidency returns an empty state.
func NewResidency() *Residency {
	return &Residency{Sets: map[tierKey]map[uint64]struct{}{}, removed: map[tierKey]map[uint64]struct{}{}}
}

// Apply folds one event of instance inst in; it returns how many of a
// store's hashes had been removed before (re-stores).
func (r *Residency) Apply(inst uint32, ev *Event) (restores int64) {
	k := tierKey{inst, ev.MediumOrGPU()}
	switch ev.Kind {
	case Stored:
		s := r.set(r.Sets, k)
		rm := r.removed[k]
		for _, h := range ev.Hashes {
			if _, ok := rm[h]; ok {
				restores++
				delete(rm, h)
			}
			s[h] = struct{}{}
		}
	case Removed:
		s := r.Sets[k]
		rm := r.set(r.removed, k)
		for _, h := range ev.Hashes {
			delete(s, h)
			rm[h] = struct{}{}
		}
	case Cleared:
		// vLLM clears its GPU prefix cache; every medium of the instance
		// goes, as a consumer must assume.
		for key, s := range r.Sets {
			if key.inst == inst {
				rm := r.set(r.removed, key)
				for h := range s {
					rm[h] = struct{}{}
				}
				delete(r.Sets, key)
			}
		}
	}
	return restores
}

func (r *Residency) set(m map[tierKey]map[uint64]struct{}, k tierKey) map[uint64]struct{} {
	s := m[k]
	if s == nil {
		s = map[uint64]struct{}{}
		m[k] = s
	}
	return s
}

// Resident returns the hashes resident on instance inst in medium.
func (r *Residency) Resident(inst uint32, medium string) map[uint64]struct{} {
	return r.Sets[tierKey{inst, medium}]
}

// StatsFile reads the log at path.
func StatsFile(path string) (*Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadStats(f, path)
}

// ReadStats reads a log from r; name labels errors.
func ReadStats(r io.Reader, name string) (*Stats, error) {
	rd, err := NewReader(r, name)
	if err != nil {
		return nil, err
	}
	st := &Stats{ByType: map[string]int64{}, ByMedium: map[string]int64{}, ByEncoding: map[string]int64{}}
	inst := map[uint32]*InstanceStats{}
	get := func(i uint32) *InstanceStats {
		s := inst[i]
		if s == nil {
			s = &InstanceStats{Instance: i, Resident: map[string]int64{}}
			inst[i] = s
		}
		return s
	}
	res := NewResidency()
	owners := map[uint64]uint32{}
	shared := map[uint64]bool{}
	var rec Record
	for {
		err := rd.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		st.Records++
		switch rec.Type {
		case RecSource:
			get(rec.Instance).Endpoint = rec.Endpoint
		case RecGap:
			st.Gaps++
			st.GapSeqs += rec.Count
		case RecMalformed:
			st.Malformed++
		case RecOutage:
			st.Outages++
			get(rec.Instance).Outages++
		case RecEpoch:
			// A restarted engine starts with empty caches and tells nobody.
			st.Epochs++
			get(rec.Instance).Epochs++
			res.Apply(rec.Instance, &Event{Kind: Cleared})
		case RecFrame:
			b, err := Decode(rec.Payload)
			if err != nil {
				// A recorder keeps only frames it decoded; this one is in
				// the log's bytes, so the log is wrong.
				return nil, fmt.Errorf("%w: %s: frame seq %d of instance %d: %v", ErrCorrupt, name, rec.Seq, rec.Instance, err)
			}
			st.Frames++
			if rec.Replayed {
				st.Replayed++
			}
			st.ByEncoding[b.Encoding.String()]++
			if st.FirstTS == 0 || b.TS < st.FirstTS {
				st.FirstTS = b.TS
			}
			st.LastTS = max(st.LastTS, b.TS)
			is := get(rec.Instance)
			is.Frames++
			for i := range b.Events {
				ev := &b.Events[i]
				st.Events++
				st.ByType[ev.Kind.String()]++
				if ev.Kind != Cleared {
					st.ByMedium[ev.MediumOrGPU()]++
				}
				switch ev.Kind {
				case Stored:
					is.BlocksStored += int64(len(ev.Hashes))
					for _, h := range ev.Hashes {
						if o, ok := owners[h]; !ok {
							owners[h] = rec.Instance
						} else if o != rec.Instance {
							shared[h] = true
						}
					}
				case Removed:
					is.BlocksRemoved += int64(len(ev.Hashes))
				case Cleared:
					is.Clears++
				}
				is.Restores += res.Apply(rec.Instance, ev)
			}
		}
	}
	st.Truncated = rd.Truncated
	st.SharedHashes = int64(len(shared))
	for k, s := range res.Sets {
		get(k.inst).Resident[k.medium] = int64(len(s))
	}
	for _, s := range inst {
		st.Instances = append(st.Instances, *s)
	}
	sort.Slice(st.Instances, func(i, j int) bool { return st.Instances[i].Instance < st.Instances[j].Instance })
	return st, nil
}
