package bucket

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
//	quarantine/                         damaged files moved (or, for a
//	                                    metadata file replaced by a repaired
//	                                    one, linked) aside on open; never read
//
// Metadata, version 2 (written since the store checks each entry on its
// own). Header (56 bytes):
//
//	0  magic "KVSBKT\x00\x01"   8  version u32 (2)   12 align u32
//	16 bucket id u64           24 entry count u32   28 flags u32 (0)
//	32 data size u64 (padded)  40 created, unix ns i64
//	48 CRC32-C of bytes 0-47 u32   52 zero u32
//
// Then one 40-byte entry per block, in the order the blocks were put:
//
//	0 key u64   8 offset u64   16 size u64   24 CRC32-C of the block u32
//	28 flags u32 (bit 0: dead, i.e. deleted or superseded)
//	32 CRC32-C of bytes 0-31, the bucket id u64 and the entry's index u32
//	36 zero u32
//
// Trailer (8 bytes): CRC32-C of everything before it u32, then "KEND".
//
// When the trailer's checksum fails but the header's holds, the entries
// whose own checksums hold are recovered and the rest are lost: one
// flipped bit costs one block, not the bucket. A lost entry still counts
// as a death of the key it names, so that an older copy cannot outlive it. Version 1 (48-byte header,
// 32-byte entries without their own checksum, same trailer) is still read;
// a damaged version 1 file cannot be salvaged. A bucket's metadata is
// rewritten as version 2 the next time it changes.
const (
	bucketMetaMagic   = "KVSBKT\x00\x01"
	bucketMetaVersion = 2
	bucketMetaHead    = 56
	bucketMetaEnt     = 40
	bucketMetaHeadV1  = 48
	bucketMetaEntV1   = 32
	bucketMetaTail    = 8
	bucketMetaEnd     = "KEND"
	bucketEntDead     = 1

	bucketPrefix  = "bucket-"
	bucketDataExt = ".data"
	bucketMetaExt = ".meta"
	bucketTmpExt  = ".meta.tmp"
	bucketQuarDir = "quarantine"
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
	// pend: dead because a copy in the open bucket replaced it. Until that
	// bucket is sealed the death must not reach disk, nor may this copy's
	// bucket be removed: it is the only durable copy.
	pend bool
}

// bucketMeta is a decoded metadata file.
type bucketMeta struct {
	id       uint64
	version  int
	align    int64
	dataSize int64
	created  int64
	ents     []bucketEntry
	total    int    // entries the header announces
	damage   string // why entries were lost ("" when the file is intact)
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

// bucketEntChecksum is the CRC32-C of an entry's first 32 bytes followed by
// the bucket id and the entry's index (little-endian), so that an entry
// copied to another place or bucket does not verify. The last 12 bytes go
// through the table by hand: crc32.Update would make them escape.
func bucketEntChecksum(p []byte, id uint64, i int) uint32 {
	c := ^bucketChecksum(p[:32])
	for k := range 12 {
		v := byte(id >> (8 * k))
		if k >= 8 {
			v = byte(uint32(i) >> (8 * (k - 8)))
		}
		c = bucketCRC[byte(c)^v] ^ (c >> 8)
	}
	return ^c
}

// encodeBucketMeta writes m into buf, which must hold
// bucketMetaSize(len(m.ents)) bytes, and returns the length. A death still
// pending (pend) is written as alive.
func encodeBucketMeta(buf []byte, m *bucketMeta) int {
	le := binary.LittleEndian
	n := bucketMetaSize(len(m.ents))
	b := buf[:n]
	clear(b)
	copy(b, bucketMetaMagic)
	le.PutUint32(b[8:], bucketMetaVersion)
	le.PutUint32(b[12:], uint32(m.align))
	le.PutUint64(b[16:], m.id)
	le.PutUint32(b[24:], uint32(len(m.ents)))
	le.PutUint64(b[32:], uint64(m.dataSize))
	le.PutUint64(b[40:], uint64(m.created))
	le.PutUint32(b[48:], bucketChecksum(b[:48]))
	p := b[bucketMetaHead:]
	for i := range m.ents {
		e := &m.ents[i]
		le.PutUint64(p[0:], e.key)
		le.PutUint64(p[8:], uint64(e.off))
		le.PutUint64(p[16:], uint64(e.size))
		le.PutUint32(p[24:], e.crc)
		var fl uint32
		if e.dead && !e.pend {
			fl = bucketEntDead
		}
		le.PutUint32(p[28:], fl)
		le.PutUint32(p[32:], bucketEntChecksum(p, m.id, i))
		p = p[bucketMetaEnt:]
	}
	le.PutUint32(p, bucketChecksum(b[:n-bucketMetaTail]))
	copy(p[4:], bucketMetaEnd)
	return n
}

var errBucketMeta = errors.New("bad bucket metadata")

// decodeBucketMeta checks everything the metadata says about itself: size,
// checksums, id, alignment, and that every block lies inside the recorded
// data size without overlapping the one before. An error means nothing in
// the file can be trusted. A file whose trailer checksum fails (or whose
// length is wrong) but whose header holds comes back with the entries that
// verify on their own, and m.damage says what was lost. The data file
// itself is checked by the caller.
func decodeBucketMeta(b []byte, id uint64) (*bucketMeta, error) {
	le := binary.LittleEndian
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", errBucketMeta, fmt.Sprintf(format, a...))
	}
	if len(b) < bucketMetaHeadV1+bucketMetaTail {
		return nil, bad("metadata truncated (%d bytes, header alone is %d)", len(b), bucketMetaHeadV1+bucketMetaTail)
	}
	if string(b[:8]) != bucketMetaMagic {
		return nil, bad("metadata has no bucket magic number (garbage or another format)")
	}
	version := le.Uint32(b[8:])
	head, ent := int64(bucketMetaHead), int64(bucketMetaEnt)
	switch version {
	case 1:
		head, ent = bucketMetaHeadV1, bucketMetaEntV1
	case bucketMetaVersion:
		if len(b) < bucketMetaHead+bucketMetaTail {
			return nil, bad("metadata truncated (%d bytes, header alone is %d)", len(b), bucketMetaHead+bucketMetaTail)
		}
		if bucketChecksum(b[:48]) != le.Uint32(b[48:]) {
			return nil, bad("metadata header checksum mismatch")
		}
	default:
		return nil, bad("metadata version %d; this kvsim reads versions 1 and %d (written by a newer kvsim?)", version, bucketMetaVersion)
	}
	count := int64(le.Uint32(b[24:]))
	want := head + count*ent + bucketMetaTail
	damage := ""
	switch {
	case int64(len(b)) < want:
		damage = fmt.Sprintf("metadata truncated (%d of %d bytes)", len(b), want)
	case int64(len(b)) > want:
		damage = fmt.Sprintf("metadata has %d bytes after its end", int64(len(b))-want)
	default:
		tail := b[want-bucketMetaTail:]
		if got := bucketChecksum(b[:want-bucketMetaTail]); got != le.Uint32(tail) || string(tail[4:]) != bucketMetaEnd {
			damage = "metadata checksum mismatch"
		}
	}
	if damage != "" && version == 1 {
		return nil, bad("%s (version 1 metadata has no per-entry checksums to salvage by)", damage)
	}
	m := &bucketMeta{
		id:       le.Uint64(b[16:]),
		version:  int(version),
		align:    int64(le.Uint32(b[12:])),
		dataSize: int64(le.Uint64(b[32:])),
		created:  int64(le.Uint64(b[40:])),
		total:    int(count),
		damage:   damage,
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
	avail := min(count, (int64(len(b))-head-bucketMetaTail)/ent)
	if damage != "" {
		avail = min(count, max(0, int64(len(b))-head)/ent)
	}
	m.ents = make([]bucketEntry, 0, avail)
	var prevEnd int64
	firstBad, kept := "", 0
	for i := range int(avail) {
		p := b[head+int64(i)*ent:]
		e := bucketEntry{
			key:  le.Uint64(p[0:]),
			off:  int64(le.Uint64(p[8:])),
			size: int64(le.Uint64(p[16:])),
			crc:  le.Uint32(p[24:]),
			dead: le.Uint32(p[28:])&bucketEntDead != 0,
		}
		var why string
		end := e.off + bucketAlignUp(e.size, m.align)
		switch {
		case version != 1 && bucketEntChecksum(p, m.id, i) != le.Uint32(p[32:]):
			why = fmt.Sprintf("entry %d checksum mismatch", i)
		case e.off < 0 || e.size < 0 || e.off%m.align != 0 || e.off < prevEnd:
			why = fmt.Sprintf("entry %d (key %#x) has a bad offset %d", i, e.key, e.off)
		case end < e.off || end > m.dataSize:
			why = fmt.Sprintf("entry %d (key %#x) at offset %d+%d exceeds the recorded data size %d", i, e.key, e.off, e.size, m.dataSize)
		}
		if why != "" {
			if damage == "" {
				return nil, bad("%s", why)
			}
			if firstBad == "" {
				firstBad = "; " + why
			}
			// The entry may have been its key's newest copy: keep it as a
			// dead, empty one, so that it still shadows older copies of
			// the key it names (a garbled key costs another key's block at
			// worst, never serves a superseded one).
			m.ents = append(m.ents, bucketTombstone(e.key, prevEnd))
			continue
		}
		prevEnd = end
		m.ents = append(m.ents, e)
		kept++
	}
	if damage != "" {
		m.damage = fmt.Sprintf("%s%s: recovered %d of %d entries by their own checksums", damage, firstBad, kept, count)
	}
	return m, nil
}

// bucketTombstone is a lost entry of key kept as dead and empty at off (the
// end of the entry before it), which the checks above accept.
func bucketTombstone(key uint64, off int64) bucketEntry {
	return bucketEntry{key: key, off: off, dead: true}
}

func bucketAlignUp(n, a int64) int64 { return (n + a - 1) &^ (a - 1) }
