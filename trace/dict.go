package trace

import "math"

// Dict maps raw hash ids to dense int32 block indices in order of first
// appearance, so downstream state can live in slices indexed by block.
type Dict struct {
	m map[int64]int32
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{m: make(map[int64]int32)} }

// ID returns the dense index of h, assigning the next one on first sight.
// It panics past 2^31-1 distinct ids, far beyond any trace we replay.
func (d *Dict) ID(h int64) int32 {
	if id, ok := d.m[h]; ok {
		return id
	}
	if len(d.m) == math.MaxInt32 {
		panic("trace: Dict: more than 2^31-1 distinct ids")
	}
	id := int32(len(d.m))
	d.m[h] = id
	return id
}

// Len is the number of distinct ids seen.
func (d *Dict) Len() int { return len(d.m) }
