// Package payload makes block payloads: a deterministic function of the
// block id, so a copy read back from any tier can be checked without
// keeping the original: 8 bytes of id, 8 bytes of length, then a splitmix64
// stream seeded by the id.
package payload

import (
	"encoding/binary"
)

func splitmix(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Fill writes block id's payload into buf.
func Fill(buf []byte, id int32) {
	if len(buf) < 16 {
		clear(buf)
		return
	}
	binary.LittleEndian.PutUint64(buf, uint64(id))
	binary.LittleEndian.PutUint64(buf[8:], uint64(len(buf)))
	s := uint64(id)*0x2545f4914f6cdd1d + 1
	i := 16
	for ; i+8 <= len(buf); i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], splitmix(&s))
	}
	if i < len(buf) {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], splitmix(&s))
		copy(buf[i:], tail[:])
	}
}

// Verify reports whether buf holds block id's payload of len(buf) bytes.
func Verify(buf []byte, id int32) bool {
	if len(buf) < 16 {
		for _, c := range buf {
			if c != 0 {
				return false
			}
		}
		return true
	}
	if binary.LittleEndian.Uint64(buf) != uint64(id) || binary.LittleEndian.Uint64(buf[8:]) != uint64(len(buf)) {
		return false
	}
	s := uint64(id)*0x2545f4914f6cdd1d + 1
	i := 16
	for ; i+8 <= len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:]) != splitmix(&s) {
			return false
		}
	}
	if i < len(buf) {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], splitmix(&s))
		for j := i; j < len(buf); j++ {
			if buf[j] != tail[j-i] {
				return false
			}
		}
	}
	return true
}
