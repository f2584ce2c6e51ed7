package hw

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// On-disk format of a bucket (all integers little-endian):
//
//	bucket-<id as 16 hex digits>.data   blocks, each at an offset that is a
//	                                    multiple of the bucket's alignment,
//	                                    zero-padded to the next multiple
//	bucket-<id>.meta                    header, entries, trailer (below)
//	bucket-<id>.meta.tmp                a metadata file being written; it is
//	                                    renamed to .meta only once durable
//
// Metadata header (48 bytes):
//
//	0  magic "KVSBKT\x00\x01"   8  version u32 (1)   12 align u32
//	16 bucket id u64           24 entry count u32   28 flags u32 (0)
//	32 data size u64 (padded)  40 created, unix ns i64
//
// Then one 32-byte entry per block, in the order the blocks were put:
//
//	0 key u64   8 offset u64   16 size u64   24 CRC32-C of the block u32
//	28 flags u32 (bit 0: dead, i.e. deleted or superseded)
//
// Trailer (8 bytes): CRC32-C of everything before it u32, then "KEND".
const (
	bucketMetaMagic   = "KVSBKT\x00\x01"
	bucketMetaVersion = 1
	bucketMetaHead    = 48
	bucketMetaEnt     = 32
	bucketMetaTail    = 8
	bucketMetaEnd     = "KEND"
	bucketEntDead     = 1

	bucketPrefix  = "bucket-"
	bucketDataExt = ".data"
	bucketMetaExt = ".meta"
	bucketTmpExt  = ".meta.tmp"
)

var bucketCRC = crc32.MakeTable(crc32.Castagnoli)

func bucketChecksum(b []byte) uint32 { return crc32.Checksum(b, bucketCRC) }

// bucketEntry is one block of a bucket.
type bucketEntry struct {
	key  uint64
	off  int64
	size int64
	crc  uint32
	dead bool
}

// bucketMeta is a decoded metadata file.
type bucketMeta struct {
	id       uint64
	align    int64
	dataSize int64
	created  int64
	ents     []bucketEntry
}

func bucketMetaSize(n int) int { return bucketMetaHead + n*bucketMetaEnt + bucketMetaTail }

func bucketFileName(id uint64, ext string) string {
	return fmt.Sprintf("%s%016x%s", bucketPrefix, id, ext)
}

// parseBucketName recognises the store's file names; anything else in the
// directory is left alone.
func parseBucketName(name string) (id uint64, ext string, ok bool) {
	const hexLen = 16
	if !strings.HasPrefix(name, bucketPrefix) || len(name) < len(bucketPrefix)+hexLen {
		return 0, "", false
	}
	id, err := strconv.ParseUint(name[len(bucketPrefix):len(bucketPrefix)+hexLen], 16, 64)
	if err != nil {
		return 0, "", false
	}
	switch ext = name[len(bucketPrefix)+hexLen:]; ext {
	case bucketDataExt, bucketMetaExt, bucketTmpExt:
		return id, ext, true
	}
	return 0, "", false
}

// encodeBucketMeta writes m into buf, which must hold
// bucketMetaSize(len(m.ents)) bytes, and returns the length.
func encodeBucketMeta(buf []byte, m *bucketMeta) int {
	le := binary.LittleEndian
	n := bucketMetaSize(len(m.ents))
	b := buf[:n]
	copy(b, bucketMetaMagic)
	le.PutUint32(b[8:], bucketMetaVersion)
	le.PutUint32(b[12:], uint32(m.align))
	le.PutUint64(b[16:], m.id)
	le.PutUint32(b[24:], uint32(len(m.ents)))
	le.PutUint32(b[28:], 0)
	le.PutUint64(b[32:], uint64(m.dataSize))
	le.PutUint64(b[40:], uint64(m.created))
	p := b[bucketMetaHead:]
	for i := range m.ents {
		e := &m.ents[i]
		le.PutUint64(p[0:], e.key)
		le.PutUint64(p[8:], uint64(e.off))
		le.PutUint64(p[16:], uint64(e.size))
		le.PutUint32(p[24:], e.crc)
		var fl uint32
		if e.dead {
			fl = bucketEntDead
		}
		le.PutUint32(p[28:], fl)
		p = p[bucketMetaEnt:]
	}
	le.PutUint32(p, bucketChecksum(b[:n-bucketMetaTail]))
	copy(p[4:], bucketMetaEnd)
	return n
}

var errBucketMeta = errors.New("bad bucket metadata")

// decodeBucketMeta checks everything the metadata says about itself: size,
// checksum, id, alignment, and that every block lies inside the recorded
// data size without overlapping the one before. The data file itself is
// checked by the caller.
func decodeBucketMeta(b []byte, id uint64) (*bucketMeta, error) {
	le := binary.LittleEndian
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", errBucketMeta, fmt.Sprintf(format, a...))
	}
	if len(b) < bucketMetaHead+bucketMetaTail {
		return nil, bad("metadata truncated (%d bytes, header alone is %d)", len(b), bucketMetaHead+bucketMetaTail)
	}
	if string(b[:8]) != bucketMetaMagic {
		return nil, bad("metadata has no bucket magic number (garbage or another format)")
	}
	if v := le.Uint32(b[8:]); v != bucketMetaVersion {
		return nil, bad("metadata version %d, want %d", v, bucketMetaVersion)
	}
	count := int64(le.Uint32(b[24:]))
	want := int64(bucketMetaHead) + count*bucketMetaEnt + bucketMetaTail
	if int64(len(b)) < want {
		return nil, bad("metadata truncated (%d of %d bytes)", len(b), want)
	}
	if int64(len(b)) > want {
		return nil, bad("metadata has %d bytes after its end", int64(len(b))-want)
	}
	tail := b[want-bucketMetaTail:]
	if got := bucketChecksum(b[:want-bucketMetaTail]); got != le.Uint32(tail) || string(tail[4:]) != bucketMetaEnd {
		return nil, bad("metadata checksum mismatch")
	}
	m := &bucketMeta{
		id:       le.Uint64(b[16:]),
		align:    int64(le.Uint32(b[12:])),
		dataSize: int64(le.Uint64(b[32:])),
		created:  int64(le.Uint64(b[40:])),
		ents:     make([]bucketEntry, count),
	}
	if m.id != id {
		return nil, bad("metadata names bucket %016x", m.id)
	}
	if m.align < 512 || m.align&(m.align-1) != 0 {
		return nil, bad("alignment %d is not a power of two >= 512", m.align)
	}
	if m.dataSize < 0 || m.dataSize%m.align != 0 {
		return nil, bad("data size %d is not a multiple of the alignment %d", m.dataSize, m.align)
	}
	p := b[bucketMetaHead:]
	var prevEnd int64
	for i := range m.ents {
		e := &m.ents[i]
		e.key = le.Uint64(p[0:])
		e.off = int64(le.Uint64(p[8:]))
		e.size = int64(le.Uint64(p[16:]))
		e.crc = le.Uint32(p[24:])
		e.dead = le.Uint32(p[28:])&bucketEntDead != 0
		p = p[bucketMetaEnt:]
		if e.off < 0 || e.size < 0 || e.off%m.align != 0 || e.off < prevEnd {
			return nil, bad("entry %d (key %#x) has a bad offset %d", i, e.key, e.off)
		}
		end := e.off + bucketAlignUp(e.size, m.align)
		if end < e.off || end > m.dataSize {
			return nil, bad("entry %d (key %#x) at offset %d+%d exceeds the recorded data size %d", i, e.key, e.off, e.size, m.dataSize)
		}
		prevEnd = end
	}
	return m, nil
}

func bucketAlignUp(n, a int64) int64 { return (n + a - 1) &^ (a - 1) }
