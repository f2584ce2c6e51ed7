package trace

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"kvsim/internal/atomicfile"
)

// A binary trace (.kvtc) holds what the parser found in every line of a
// source trace, so that reading it again costs no parsing:
//
//	header (hdrSize bytes, little endian): magic "KVTC", version, format,
//	    the source's size and SHA-256, flags, counts, section lengths,
//	    the body's CRC-32C and the header's own
//	records, one per request line, in varints:
//	    line - previous line, zigzag(timestamp ns - previous),
//	    input_length, output_length, session entry it becomes + 1, entry
//	    of its parent + 1, delay ns + 1 (0: none), number of ids, and
//	    per id zigzag(dense - (previous dense in the line + 1)), but the
//	    first: dense<<1, or (next new dense - dense)<<1 | 1, the smaller
//	table: the raw id of each dense id, zigzag(raw - previous raw)
//
// Dense ids number the raw ids in order of first appearance, so a new
// block is one byte and a prefix shared with an earlier request a run of
// one-byte 0s after its first id. The records are the lines as parsed before
// anything that depends on the options: the block count is checked,
// Bailian ids regrouped, arrivals rebased and sped up when it is read, by
// the same code as for the source, so a binary trace read with any options
// yields exactly the requests and errors the source would. A source with a
// bad line is not converted (the automatic cache records just that, so it
// is not tried again). The source's SHA-256 is of every byte the
// conversion parsed: a cache is used only for a source hashing the same
// (version 2 keyed it by size, mtime and a CRC of sampled chunks, which an
// edit between the chunks keeping both passed).

const (
	binMagic   = "KVTC"
	binVersion = 3
	hdrSize    = 128

	flagUncacheable = 1 // the source has a bad line: parse it instead
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// binHeader is a binary trace's header.
type binHeader struct {
	format   int
	srcSize  int64
	srcHash  [sha256.Size]byte
	flags    uint64
	records  uint64
	refs     uint64
	distinct uint64
	sessions uint64
	recLen   uint64
	tabLen   uint64
	bodyCRC  uint32
}

func (h *binHeader) encode() []byte {
	b := make([]byte, hdrSize)
	copy(b, binMagic)
	le := binary.LittleEndian
	le.PutUint32(b[4:], binVersion)
	b[8] = byte(h.format)
	le.PutUint64(b[16:], uint64(h.srcSize))
	copy(b[24:56], h.srcHash[:])
	le.PutUint64(b[56:], h.flags)
	le.PutUint64(b[64:], h.records)
	le.PutUint64(b[72:], h.refs)
	le.PutUint64(b[80:], h.distinct)
	le.PutUint64(b[88:], h.sessions)
	le.PutUint64(b[96:], h.recLen)
	le.PutUint64(b[104:], h.tabLen)
	le.PutUint32(b[120:], h.bodyCRC)
	le.PutUint32(b[124:], crc32.Checksum(b[:124], castagnoli))
	return b
}

// decodeHeader checks a header's magic, version and checksum.
func decodeHeader(b []byte) (binHeader, error) {
	var h binHeader
	le := binary.LittleEndian
	switch {
	case len(b) < hdrSize || string(b[:4]) != binMagic:
		return h, errors.New("not a kvsim binary trace")
	case le.Uint32(b[4:]) != binVersion:
		return h, fmt.Errorf("binary trace version %d, this kvsim reads %d (convert its source again)", le.Uint32(b[4:]), binVersion)
	case le.Uint32(b[124:]) != crc32.Checksum(b[:124], castagnoli):
		return h, errors.New("corrupt binary trace (header checksum)")
	}
	h.format = int(b[8])
	h.srcSize = int64(le.Uint64(b[16:]))
	copy(h.srcHash[:], b[24:56])
	h.flags = le.Uint64(b[56:])
	h.records = le.Uint64(b[64:])
	h.refs = le.Uint64(b[72:])
	h.distinct = le.Uint64(b[80:])
	h.sessions = le.Uint64(b[88:])
	h.recLen = le.Uint64(b[96:])
	h.tabLen = le.Uint64(b[104:])
	h.bodyCRC = le.Uint32(b[120:])
	if h.format >= len(formats) {
		return h, fmt.Errorf("corrupt binary trace (format %d)", h.format)
	}
	return h, nil
}

// binSource feeds a Reader from a binary trace.
type binSource struct {
	data    []byte // the whole file, mapped
	release func()
	h       binHeader
	pos     int   // next record
	next    int64 // the next new dense id
	recEnd  int
	table   []int64 // raw id of each dense id
	line    int
	ts      int64
}

func (b *binSource) rewind() { b.pos, b.line, b.ts, b.next = hdrSize, 0, 0, 0 }

func (b *binSource) close() {
	if b.release != nil {
		b.release()
		b.release = nil
	}
	b.data = nil
}

// openBinary maps the binary trace at path and checks it whole.
func openBinary(path string) (*binSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < hdrSize || st.Size() > 1<<46 {
		return nil, errors.New("not a kvsim binary trace")
	}
	data, release, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, err
	}
	b, err := newBinSource(data)
	if err != nil {
		release()
		return nil, err
	}
	b.release = release
	return b, nil
}

// newBinSource checks data (a whole binary trace) and decodes its table.
func newBinSource(data []byte) (*binSource, error) {
	h, err := decodeHeader(data)
	if err != nil {
		return nil, err
	}
	body := data[hdrSize:]
	if h.recLen > uint64(len(body)) || h.tabLen != uint64(len(body))-h.recLen {
		return nil, errors.New("corrupt binary trace (truncated)")
	}
	if crc32.Checksum(body, castagnoli) != h.bodyCRC {
		return nil, errors.New("corrupt binary trace (checksum)")
	}
	if h.distinct > h.tabLen || h.sessions > h.recLen || h.refs > h.recLen || h.records > h.recLen {
		return nil, errors.New("corrupt binary trace (counts)")
	}
	b := &binSource{data: data, h: h, recEnd: hdrSize + int(h.recLen)}
	b.rewind()
	return b, nil
}

// decodeTable decodes the raw ids, on first need (a DenseOnly reader never
// needs them).
func (b *binSource) decodeTable() bool {
	tab := b.data[b.recEnd:]
	b.table = make([]int64, b.h.distinct)
	var prev int64
	for i := range b.table {
		d, n := binary.Varint(tab)
		if n <= 0 {
			b.table = nil
			return false
		}
		tab = tab[n:]
		prev += d
		b.table[i] = prev
	}
	if len(tab) != 0 {
		b.table = nil
		return false
	}
	return true
}

// errCorrupt is a record that does not decode: possible only for a file
// made to pass the checksums.
func (r *Reader) errCorrupt() error {
	return errors.New("trace: " + r.name + ": corrupt binary trace at byte " + strconv.Itoa(r.bin.pos))
}

// record decodes the next record into f (its fields, the timestamp
// absolute) and appends its dense ids to dense, advancing b; ok is false
// for a record that does not decode (possible only for a file made to pass
// the checksums), and then b is not advanced.
func (b *binSource) record(f *[8]uint64, dense []int32) (_ []int32, ok bool) {
	d := b.data[b.pos:b.recEnd]
	for i := range f {
		if len(d) > 0 && d[0] < 0x80 { // one byte, the common case
			f[i] = uint64(d[0])
			d = d[1:]
			continue
		}
		x, n := binary.Uvarint(d)
		if n <= 0 {
			return dense, false
		}
		f[i] = x
		d = d[n:]
	}
	ts := b.ts + (int64(f[1]>>1) ^ -int64(f[1]&1)) // zigzag
	switch {
	case f[0] < 1 || f[0] > 1<<31 || uint64(b.line)+f[0] > 1<<40,
		ts < 0, f[2] > MaxTokens, f[3] > MaxTokens,
		f[4] > b.h.sessions, f[5] > b.h.sessions, f[6] > uint64(MaxArrival)+1,
		f[7] > uint64(len(d)):
		return dense, false
	}
	next, prev := b.next, int64(-1)
	for k := range f[7] {
		if len(d) == 0 {
			return dense, false
		}
		var id int64
		if c := d[0]; c < 0x80 { // most are one byte: 0, the next block
			if k > 0 {
				id = prev + 1 + (int64(c>>1) ^ -int64(c&1))
			} else if c&1 == 0 {
				id = int64(c >> 1)
			} else {
				id = next - int64(c>>1)
			}
			d = d[1:]
		} else {
			x, n := binary.Uvarint(d)
			if n <= 0 || x > 1<<62 {
				return dense, false
			}
			d = d[n:]
			switch {
			case k > 0:
				id = prev + 1 + (int64(x>>1) ^ -int64(x&1))
			case x&1 == 0:
				id = int64(x >> 1)
			default:
				id = next - int64(x>>1)
			}
		}
		if id < 0 || id > next || uint64(id) >= b.h.distinct { // ids appear in order
			return dense, false
		}
		if id == next {
			next++
		}
		dense = append(dense, int32(id))
		prev = id
	}
	b.pos = b.recEnd - len(d)
	b.line += int(f[0])
	b.ts = ts
	b.next = next
	f[1] = uint64(ts)
	return dense, true
}

// cached is raw for a binary trace.
func (r *Reader) cached(v *values) (ids []int64, reason string, empty bool, err error) {
	b := r.bin
	if b.pos >= b.recEnd {
		return nil, "", false, io.EOF
	}
	raw := !r.opt.DenseOnly
	if raw && b.table == nil && b.h.distinct > 0 && !b.decodeTable() {
		return nil, "", false, r.errCorrupt()
	}
	var f [8]uint64
	var ok bool
	if r.dense, ok = b.record(&f, r.dense[:0]); !ok {
		return nil, "", false, r.errCorrupt()
	}
	r.p.ids = r.p.ids[:0]
	if raw {
		for _, id := range r.dense {
			r.p.ids = append(r.p.ids, b.table[id])
		}
	}
	r.line = b.line
	v.arrival, v.input, v.output = int64(f[1]), int(f[2]), int(f[3])
	r.cur = linkState{store: int32(f[4]), lookup: int32(f[5]), delay: int64(f[6]) - 1}
	switch r.kind {
	case fmtBailian:
		g := r.opt.BlockTokens / bailianBlock
		r.chain = regroup(r.chain[:0], r.p.ids, g)
		r.dense = regroupDense(r.dense, g)
		return r.chain, "", false, nil
	case fmtMooncake:
		if need := numBlocks(v.input, r.opt.BlockTokens); need != len(r.dense) {
			return nil, "input_length " + strconv.Itoa(v.input) + " needs " + strconv.Itoa(need) +
				" hash_ids, got " + strconv.Itoa(len(r.dense)), false, nil
		}
	}
	return r.p.ids, "", false, nil
}

// DenseAll reads a whole binary trace at once for a consumer of dense ids:
// request i's blocks are blocks[starts[i]:starts[i+1]], appended to blocks
// (given empty) and starts (given as [0]), numbered in order of first
// appearance, distinct of them. ok is false, and nothing is read, unless
// r is a binary trace not yet read whose every request Next would yield
// as it is (plain options, no block count or time that Next would refuse,
// no Bailian regrouping): then read it with Next.
func (r *Reader) DenseAll(blocks, starts []int32) (_, _ []int32, distinct int, ok bool) {
	b := r.bin
	if b == nil || r.err != nil || r.n > 0 || r.line > 0 || r.opt.Limit > 0 || (r.opt.Speedup > 0 && r.opt.Speedup != 1) ||
		(r.kind == fmtBailian && r.opt.BlockTokens != bailianBlock) || b.h.refs > math.MaxInt32 ||
		len(blocks) != 0 || len(starts) != 1 || starts[0] != 0 {
		return blocks, starts, 0, false
	}
	var (
		f          [8]uint64
		base, last int64
	)
	for b.pos < b.recEnd {
		before := len(blocks)
		var good bool
		if blocks, good = b.record(&f, blocks); !good {
			break
		}
		ts := int64(f[1])
		if len(starts) == 1 {
			base, last = ts, ts
		}
		if ts < last || ts-base > MaxArrival ||
			(r.kind == fmtMooncake && numBlocks(int(f[2]), r.opt.BlockTokens) != len(blocks)-before) {
			break
		}
		last = ts
		starts = append(starts, int32(len(blocks)))
	}
	if b.pos < b.recEnd { // Next has something to say: start again with it
		b.rewind()
		return blocks[:0], starts[:1], 0, false
	}
	r.err = io.EOF
	return blocks, starts, int(b.next), true
}

// regroupDense is regroup on dense ids, in place.
func regroupDense(ids []int32, g int) []int32 {
	if g <= 1 {
		return ids
	}
	n := 0
	for end := g; end-g < len(ids); end += g {
		ids[n] = ids[min(end, len(ids))-1]
		n++
	}
	return ids[:n]
}

// DenseIDs returns, after Next, the request's blocks as dense indices below
// n (equal blocks, equal indices) when the reader has them without a
// dictionary: a binary trace; n is 0 otherwise. The slice is reused.
func (r *Reader) DenseIDs() (ids []int32, n int) {
	if r.bin == nil {
		return nil, 0
	}
	return r.dense, int(r.bin.h.distinct)
}

// SizeHint is the number of requests and block references a binary trace
// holds (what a reader of it yields at most), to size buffers; 0, 0 for
// other traces.
func (r *Reader) SizeHint() (requests, refs int) {
	if r.bin == nil {
		return 0, 0
	}
	return int(r.bin.h.records), int(r.bin.h.refs)
}

// crcWriter hashes what passes through it.
type crcWriter struct {
	w io.Writer
	h hash.Hash32
	n int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.n += int64(len(p))
	return c.w.Write(p)
}

// convert parses src (a source trace in format kind, size bytes) to a
// binary trace written to w, keyed by the SHA-256 of the bytes it read. A
// bad line stops the parse with that line's *LineError (the rest is still
// hashed); the header then records the source with flagUncacheable and no
// records.
func convert(src io.Reader, size int64, name string, kind int, w io.WriteSeeker) (hdr binHeader, bad error, err error) {
	hdr = binHeader{format: kind, srcSize: size}
	sum := sha256.New()
	rd := NewReader(io.TeeReader(src, sum), name, Options{Format: formats[kind].Name, BlockTokens: bailianBlock})
	rd.build = true
	if _, err := w.Seek(hdrSize, io.SeekStart); err != nil {
		return hdr, nil, err
	}
	bh := crc32.New(castagnoli)
	cw := &crcWriter{w: w, h: bh}
	bw := bufio.NewWriterSize(cw, 1<<20)
	var (
		buf   []byte
		ids   = map[int64]int32{}
		table []int64
		line  int
		ts    int64
		v     values
	)
	for {
		rd.cur = linkState{delay: -1}
		raw, reason, blank, err := rd.raw(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			var le *LineError
			if errors.As(err, &le) && le.Err == nil {
				bad = err // a bad CSV header
				break
			}
			return hdr, nil, err
		}
		if blank {
			continue
		}
		if reason != "" {
			bad = &LineError{File: name, Line: rd.line, Reason: reason}
			break
		}
		buf = binary.AppendUvarint(buf[:0], uint64(rd.line-line))
		buf = binary.AppendVarint(buf, v.arrival-ts)
		buf = binary.AppendUvarint(buf, uint64(v.input))
		buf = binary.AppendUvarint(buf, uint64(v.output))
		buf = binary.AppendUvarint(buf, uint64(rd.cur.store))
		buf = binary.AppendUvarint(buf, uint64(rd.cur.lookup))
		buf = binary.AppendUvarint(buf, uint64(rd.cur.delay+1))
		buf = binary.AppendUvarint(buf, uint64(len(raw)))
		prev := int64(-1)
		for k, h := range raw {
			next := int64(len(table))
			id, ok := ids[h]
			if !ok {
				id = int32(len(table))
				ids[h] = id
				table = append(table, h)
			}
			if k == 0 { // from 0 or back from the next new id, whichever is nearer
				if back := next - int64(id); back < int64(id) {
					buf = binary.AppendUvarint(buf, uint64(back)<<1|1)
				} else {
					buf = binary.AppendUvarint(buf, uint64(id)<<1)
				}
			} else {
				buf = binary.AppendVarint(buf, int64(id)-prev-1)
			}
			prev = int64(id)
		}
		if _, err := bw.Write(buf); err != nil {
			return hdr, nil, err
		}
		line, ts = rd.line, v.arrival
		hdr.records++
		hdr.refs += uint64(len(raw))
	}
	if bad != nil {
		hdr.flags = flagUncacheable
		hdr.records, hdr.refs = 0, 0
		table = nil
		bw.Reset(cw)
		if _, err := cw.w.(io.Seeker).Seek(hdrSize, io.SeekStart); err != nil {
			return hdr, nil, err
		}
		cw.h.Reset()
		cw.n = 0
	} else {
		if err := bw.Flush(); err != nil {
			return hdr, nil, err
		}
		hdr.recLen = uint64(cw.n)
		var prev int64
		for _, h := range table {
			buf = binary.AppendVarint(buf[:0], h-prev)
			prev = h
			if _, err := bw.Write(buf); err != nil {
				return hdr, nil, err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return hdr, nil, err
	}
	hdr.tabLen = uint64(cw.n) - hdr.recLen
	hdr.distinct = uint64(len(table))
	hdr.sessions = uint64(max(len(rd.sessIDs), len(rd.chatIDs)))
	hdr.bodyCRC = bh.Sum32()
	if _, err := io.Copy(sum, src); err != nil { // what the parse left unread
		return hdr, nil, err
	}
	sum.Sum(hdr.srcHash[:0])
	if _, err := w.Seek(0, io.SeekStart); err != nil {
		return hdr, nil, err
	}
	if _, err := w.Write(hdr.encode()); err != nil {
		return hdr, nil, err
	}
	return hdr, bad, nil
}

// writeBinary converts the source at path to a binary trace at dst,
// through a temporary file renamed into place. It returns the source's bad
// line, if any (then dst holds only a marker when mark is set, else
// nothing is written).
func writeBinary(ctx context.Context, path, dst string, kind int, mark bool) (bad error, err error) {
	rp := resolve(path) // Spool's copy of a pipe
	src, err := os.Open(rp)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return nil, err
	}
	tmp, err := atomicfile.Create(dst)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			atomicfile.Discard(tmp)
		}
	}()
	_, bad, err = convert(ctxReader{ctx, src}, st.Size(), path, kind, tmp)
	if err != nil {
		return nil, err
	}
	if bad != nil && !mark {
		return bad, nil
	}
	if bad != nil {
		if err := tmp.Truncate(hdrSize); err != nil {
			return nil, err
		}
	}
	// A source that changed while it was read is not what the key says.
	if st2, err := os.Stat(rp); err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
		return bad, errors.New("trace: " + path + " changed while it was converted")
	}
	done = true // Commit removes the temporary if it fails
	if err := atomicfile.Commit(tmp, dst); err != nil {
		return nil, err
	}
	return bad, nil
}

// Convert writes the trace at path (in opt.Format) as a binary trace to
// out, through a temporary file renamed into place. A bad line in the
// source is its *LineError and nothing is written.
func Convert(path, out string, opt Options) error {
	return ConvertContext(context.Background(), path, out, opt)
}

// ConvertContext is Convert that stops once ctx is cancelled, returning
// ctx's error with nothing written.
func ConvertContext(ctx context.Context, path, out string, opt Options) error {
	if opt.BlockTokens <= 0 {
		opt.BlockTokens = DefaultBlockTokens
	}
	kind, err := checkOptions(opt)
	if err != nil {
		return errors.New("trace: " + path + ": " + err.Error())
	}
	if formats[kind].Magic != "" {
		return errors.New("trace: " + path + ": a " + formats[kind].Name + " file is read as it is, not converted to a binary trace")
	}
	bad, err := writeBinary(ctx, path, out, kind, false)
	if ctx.Err() != nil {
		return ctx.Err() // the reader gives it as a line's read error
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("trace: %w", err)
		}
		return err
	}
	return bad
}

// CacheMinBytes is the smallest source the automatic cache keeps a binary
// copy of: smaller traces parse in milliseconds.
var CacheMinBytes int64 = 4 << 20

// CacheEnv names the environment variable that sets where the cache goes:
// "off" turns it off, "beside" builds it beside the trace (NAME.kvtc)
// where that can be written; anything else, the default, in the user's
// cache folder, so that kvsim adds no file beside a user's trace unless
// asked.
const CacheEnv = "KVSIM_TRACE_CACHE"

// cacheDir is where a cache goes when not beside its trace.
func cacheDir() (string, error) {
	d, err := os.UserCacheDir() // $XDG_CACHE_HOME or ~/.cache on Linux
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "kvsim"), nil
}

// cachePaths are the places a cache of path may be: beside it (read if
// kvsim wrote one, built there only when asked), then in the cache folder
// (named by its absolute path).
func cachePaths(path string) []string {
	out := []string{path + ".kvtc"}
	if d, err := cacheDir(); err == nil {
		abs, err := filepath.Abs(path)
		if err == nil {
			h := fnv.New64a()
			h.Write([]byte(abs))
			out = append(out, filepath.Join(d, filepath.Base(path)+"-"+strconv.FormatUint(h.Sum64(), 16)+".kvtc"))
		}
	}
	return out
}

// ours reports whether the file at p is a binary trace (kvsim wrote it),
// or absent.
func ours(p string) (exists, mine bool) {
	f, err := os.Open(p)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist), false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return true, err == nil && string(b[:]) == binMagic
}

// hashFile is the SHA-256 of the whole file at path: what keys a cache to
// its source (a cheaper sample of the file let an edit between the
// samples pass).
func hashFile(ctx context.Context, path string) (sum [sha256.Size]byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// OpenCached is Open through the automatic binary cache: a large trace is
// converted once (beside it as NAME.kvtc if that can be written and is not
// someone else's file, else in the user's cache folder) and read from the
// binary copy while the source's size and SHA-256 match (the source is
// read whole to hash it: still far cheaper than parsing it). A binary
// trace (kvsim trace convert) given as path is read as such. The cache is
// off when $KVSIM_TRACE_CACHE is "off"; any failure to use it falls back
// to parsing the source.
func OpenCached(path string, opt Options) (*Reader, error) {
	return OpenCachedContext(context.Background(), path, opt)
}

// OpenCachedContext is OpenCached whose hashing of the source and first
// conversion (seconds for a trace of gigabytes) end with ctx's error once
// ctx is cancelled.
func OpenCachedContext(ctx context.Context, path string, opt Options) (*Reader, error) {
	if opt.BlockTokens <= 0 {
		opt.BlockTokens = DefaultBlockTokens
	}
	if k, err := formatKind(opt.Format); err == nil && formats[k].Magic != "" {
		if err := formats[k].CheckBlockTokens(opt.BlockTokens, "block_tokens"); err != nil {
			return nil, errors.New("trace: " + path + ": " + err.Error())
		}
		return openConverted(ctx, path, k, opt) // converted on each open, never cached: its IDs come from the conversion
	}
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		// Its error, a pipe read once, or Spool's copy: read as it is,
		// never cached beside the temporary copy.
		if sp := resolve(path); err == nil && sp != path {
			if _, mine := ours(sp); mine {
				return openBinaryReader(sp, path, opt, false)
			}
		}
		return Open(path, opt)
	}
	if _, mine := ours(path); mine {
		return openBinaryReader(path, path, opt, false)
	}
	kind, err := checkOptions(opt)
	if err != nil || os.Getenv(CacheEnv) == "off" || st.Size() < CacheMinBytes {
		return Open(path, opt)
	}
	var sum [sha256.Size]byte
	hashed := false
	var build string
	beside := os.Getenv(CacheEnv) == "beside"
	for i, p := range cachePaths(path) {
		exists, mine := ours(p)
		if exists && !mine {
			continue // not ours: never touched
		}
		if mine {
			h, err := readHeader(p)
			if err == nil && h.format == kind && h.srcSize == st.Size() {
				if !hashed {
					if sum, err = hashFile(ctx, path); err != nil {
						if ctx.Err() != nil {
							return nil, ctx.Err()
						}
						return Open(path, opt)
					}
					hashed = true
				}
				if h.srcHash == sum {
					if h.flags&flagUncacheable != 0 {
						return Open(path, opt)
					}
					if r, err := openBinaryReader(p, path, opt, true); err == nil {
						return r, nil
					}
				}
			}
		}
		if build == "" && (i > 0 || beside) && writableDir(p) {
			build = p
		}
	}
	if build == "" {
		return Open(path, opt)
	}
	if _, err := writeBinary(ctx, path, build, kind, true); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return Open(path, opt)
	}
	if r, err := openBinaryReader(build, path, opt, true); err == nil {
		return r, nil
	}
	return Open(path, opt)
}

// writableDir makes p's directory if needed and reports whether a file can
// be created there.
func writableDir(p string) bool {
	d := filepath.Dir(p)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return false
	}
	f, err := os.CreateTemp(d, ".kvsim-probe*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// readHeader reads the header of the binary trace at p.
func readHeader(p string) (binHeader, error) {
	f, err := os.Open(p)
	if err != nil {
		return binHeader{}, err
	}
	defer f.Close()
	b := make([]byte, hdrSize)
	if _, err := io.ReadFull(f, b); err != nil {
		return binHeader{}, errors.New("not a kvsim binary trace")
	}
	return decodeHeader(b)
}

// openBinaryReader reads the binary trace at p as a Reader named name (the
// source, for a cache; the path given, for Spool's copy), which its errors
// name. A trace given as such (cache false) is read in its
// recorded format unless opt names another (but mooncake, the default).
func openBinaryReader(p, name string, opt Options, cache bool) (*Reader, error) {
	b, err := openBinary(p)
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %v", name, pathErr(err))
	}
	if b.h.flags&flagUncacheable != 0 {
		b.close()
		return nil, errors.New("trace: " + name + ": a marker of a source with bad lines, not a binary trace")
	}
	rec := formats[b.h.format].Name
	if !cache && opt.Format != "" && opt.Format != "mooncake" && opt.Format != rec {
		b.close()
		return nil, fmt.Errorf("trace: %s: a binary trace of format %s, not %s", name, rec, opt.Format)
	}
	opt.Format = rec
	if _, err := checkOptions(opt); err != nil {
		b.close()
		return nil, errors.New("trace: " + name + ": " + err.Error())
	}
	r := NewReader(nil, name, opt)
	r.br = nil
	r.bin = b
	return r, nil
}

// readFile reads f's first size bytes.
func readFile(f *os.File, size int) ([]byte, func(), error) {
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
