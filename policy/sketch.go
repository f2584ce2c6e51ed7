package policy

import "math/bits"

// Sketch estimates how often each block was seen recently: a count-min
// sketch of 4-bit counters (4 rows) with TinyLFU's aging, which halves every
// counter once sampleSize increments have been recorded, so old popularity
// fades. An optional doorkeeper (a Bloom filter cleared at each aging)
// absorbs first occurrences, keeping one-hit wonders out of the counters.
// See Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache
// Admission Policy" (ACM TOS 2017).
type Sketch struct {
	rows       [4][]uint64 // 16 counters of 4 bits per word
	mask       uint64      // counters per row - 1
	door       []uint64    // doorkeeper bits, nil when off
	doorMask   uint64
	added      int
	sampleSize int
}

// MaxSketchBlocks caps a sketch's width. A tier's capacity over its first
// block's size can be astronomically large (a 4 TB tier of 1-byte blocks);
// past 2^24 counters a row the sketch costs 48 MiB while its error is
// already far below what admission decisions can tell apart.
const MaxSketchBlocks = 1 << 24

// NewSketch sizes a sketch for about n distinct hot blocks (at most
// MaxSketchBlocks): each row has the next power of two ≥ n counters, and
// aging runs every 10n increments.
func NewSketch(n int, doorkeeper bool) *Sketch {
	w := 1 << bits.Len(uint(min(max(n, 16), MaxSketchBlocks)-1))
	s := &Sketch{mask: uint64(w - 1), sampleSize: 10 * w}
	for i := range s.rows {
		s.rows[i] = make([]uint64, w/16)
	}
	if doorkeeper {
		s.door = make([]uint64, w/8) // 8 bits per expected entry
		s.doorMask = uint64(w*8 - 1)
	}
	return s
}

// hash spreads a block id (splitmix64 finaliser); the four row indices come
// from its four 16-bit lanes mixed with the upper half (double hashing).
func hash(b Block) uint64 {
	z := uint64(uint32(b)) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *Sketch) index(h uint64, i int) uint64 {
	return (h + uint64(i)*(h>>32|1)) & s.mask
}

// Add records one occurrence of b.
func (s *Sketch) Add(b Block) {
	h := hash(b)
	if s.door != nil {
		i1, i2 := h&s.doorMask, (h>>32)&s.doorMask
		in := s.door[i1/64]&(1<<(i1%64)) != 0 && s.door[i2/64]&(1<<(i2%64)) != 0
		if !in {
			s.door[i1/64] |= 1 << (i1 % 64)
			s.door[i2/64] |= 1 << (i2 % 64)
			s.tick()
			return
		}
	}
	for i := range s.rows {
		j := s.index(h, i)
		w, sh := &s.rows[i][j/16], (j%16)*4
		if (*w>>sh)&15 < 15 {
			*w += 1 << sh
		}
	}
	s.tick()
}

func (s *Sketch) tick() {
	if s.added++; s.added >= s.sampleSize {
		s.age()
	}
}

// Estimate is the (over-)estimated recent count of b.
func (s *Sketch) Estimate(b Block) int {
	h := hash(b)
	m := uint64(15)
	for i := range s.rows {
		j := s.index(h, i)
		m = min(m, (s.rows[i][j/16]>>((j%16)*4))&15)
	}
	n := int(m)
	if s.door != nil {
		i1, i2 := h&s.doorMask, (h>>32)&s.doorMask
		if s.door[i1/64]&(1<<(i1%64)) != 0 && s.door[i2/64]&(1<<(i2%64)) != 0 {
			n++
		}
	}
	return n
}

// age halves every counter and clears the doorkeeper.
func (s *Sketch) age() {
	for _, r := range s.rows {
		for k, w := range r {
			r[k] = (w >> 1) & 0x7777777777777777
		}
	}
	clear(s.door)
	s.added /= 2
}
