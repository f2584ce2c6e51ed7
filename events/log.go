package events

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// The log: an 8-byte magic, then records. A record is
//
//	u32 little-endian body length, u32 CRC-32C of the body, body
//
// and a body starts with its type byte. Appending is the only write, so a
// process killed mid-record leaves a short tail that readers drop.
const logMagic = "KVSEVL01"

// maxBody bounds one record: a frame larger than this is not an event batch.
const maxBody = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RecType is a record's type.
type RecType uint8

const (
	// RecSource declares a source: Instance, Endpoint (and Replay).
	RecSource RecType = 1
	// RecFrame is one received frame: Instance, Rank, Recv, Seq, Topic,
	// Payload; Replayed marks frames fetched from a replay endpoint.
	RecFrame RecType = 2
	// RecGap notes sequence numbers [Seq, Seq+Count) that were not received
	// (after any replay).
	RecGap RecType = 3
	// RecMalformed notes a frame that was not an event batch (Payload keeps
	// its bytes, Note why).
	RecMalformed RecType = 4
	// RecOutage notes that the connection to a source was lost at Recv
	// (Note: why); Seq is the next sequence number expected then. The
	// recorder redials until it is back or stopped.
	RecOutage RecType = 5
	// RecEpoch notes that a source's sequence numbers started again (an
	// engine restarted): Seq is the first of the new epoch, Count the
	// next one the old epoch would have sent. The engine's caches start
	// empty, so readers drop the instance's residency as for a clear.
	RecEpoch RecType = 6
)

// Record is one log record; which fields mean something depends on Type.
type Record struct {
	Type     RecType
	Instance uint32
	Rank     int64 // -1 unknown
	Recv     int64 // unix nanoseconds
	Seq      uint64
	Count    uint64
	Replayed bool
	Endpoint string
	Replay   string
	Topic    string
	Note     string
	Payload  []byte
}

// Writer appends records. It is not safe for concurrent use.
type Writer struct {
	f   *os.File
	w   *bufio.Writer
	buf []byte
}

// IsLog reports whether path holds an event log (its magic): the only
// file, besides an empty one, that Create may replace.
func IsLog(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	m := make([]byte, len(logMagic))
	_, err = io.ReadFull(f, m)
	return err == nil && string(m) == logMagic
}

// Create starts a new log at path (truncating it).
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, w: bufio.NewWriterSize(f, 256<<10)}
	if _, err := w.w.WriteString(logMagic); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Append buffers r; Flush hands it to the kernel.
func (w *Writer) Append(r *Record) error {
	b := w.buf[:0]
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, byte(r.Type))
	b = binary.AppendUvarint(b, uint64(r.Instance))
	b = binary.AppendVarint(b, r.Rank)
	b = binary.AppendVarint(b, r.Recv)
	b = binary.AppendUvarint(b, r.Seq)
	b = binary.AppendUvarint(b, r.Count)
	var fl byte
	if r.Replayed {
		fl = 1
	}
	b = append(b, fl)
	for _, s := range []string{r.Endpoint, r.Replay, r.Topic, r.Note} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Payload)))
	b = append(b, r.Payload...)
	body := b[8:]
	if len(body) > maxBody {
		return fmt.Errorf("record of %d bytes exceeds the log's %d-byte limit", len(body), maxBody)
	}
	binary.LittleEndian.PutUint32(b[0:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(body, castagnoli))
	w.buf = b
	_, err := w.w.Write(b)
	return err
}

// Flush writes buffered records to the file: a kill -9 after it loses
// nothing flushed.
func (w *Writer) Flush() error { return w.w.Flush() }

// Close flushes, syncs and closes.
func (w *Writer) Close() error {
	err := w.w.Flush()
	if e := w.f.Sync(); err == nil {
		err = e
	}
	if e := w.f.Close(); err == nil {
		err = e
	}
	return err
}

// Reader reads records back.
type Reader struct {
	name string
	r    *bufio.Reader
	off  int64
	body []byte
	// Truncated is set when the log ends inside a record (a recorder
	// killed mid-write): every record before it was read.
	Truncated bool
}

// ErrCorrupt is wrapped by errors about a log's bytes.
var ErrCorrupt = errors.New("corrupt event log")

// NewReader checks the magic; name labels errors.
func NewReader(r io.Reader, name string) (*Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	m := make([]byte, len(logMagic))
	if _, err := io.ReadFull(br, m); err != nil || string(m) != logMagic {
		return nil, fmt.Errorf("%w: %s: not a kvsim event log (bad magic)", ErrCorrupt, name)
	}
	return &Reader{name: name, r: br, off: int64(len(logMagic))}, nil
}

// Next returns the next record, io.EOF at the end (also after a truncated
// tail, with Truncated set). The record's strings and Payload are valid
// until the next call.
func (rd *Reader) Next(rec *Record) error {
	var hdr [8]byte
	n, err := io.ReadFull(rd.r, hdr[:])
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		rd.Truncated = n > 0
		return io.EOF
	}
	ln := binary.LittleEndian.Uint32(hdr[0:])
	sum := binary.LittleEndian.Uint32(hdr[4:])
	if ln > maxBody {
		return rd.corrupt("record length %d", ln)
	}
	if cap(rd.body) < int(ln) {
		rd.body = make([]byte, ln)
	}
	body := rd.body[:ln]
	if _, err := io.ReadFull(rd.r, body); err != nil {
		rd.Truncated = true
		return io.EOF
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return rd.corrupt("checksum mismatch")
	}
	if err := parseBody(body, rec); err != nil {
		return rd.corrupt("%v", err)
	}
	rd.off += 8 + int64(ln)
	return nil
}

func (rd *Reader) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s: record at byte %d: %s", ErrCorrupt, rd.name, rd.off, fmt.Sprintf(format, args...))
}

func parseBody(b []byte, r *Record) error {
	p := parser{b: b}
	*r = Record{Type: RecType(p.byte())}
	r.Instance = uint32(p.uvarint())
	r.Rank = p.varint()
	r.Recv = p.varint()
	r.Seq = p.uvarint()
	r.Count = p.uvarint()
	r.Replayed = p.byte()&1 != 0
	r.Endpoint = string(p.bytes())
	r.Replay = string(p.bytes())
	r.Topic = string(p.bytes())
	r.Note = string(p.bytes())
	r.Payload = p.bytes()
	if p.err != nil {
		return p.err
	}
	if len(p.b) != 0 {
		return fmt.Errorf("%d stray bytes", len(p.b))
	}
	if r.Type < RecSource || r.Type > RecEpoch {
		return fmt.Errorf("unknown record type %d", r.Type)
	}
	return nil
}

type parser struct {
	b   []byte
	err error
}

var errShort = errors.New("record body too short")

func (p *parser) byte() byte {
	if len(p.b) == 0 {
		p.err = errShort
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

func (p *parser) uvarint() uint64 {
	v, n := binary.Uvarint(p.b)
	if n <= 0 {
		p.err = errShort
		p.b = nil
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) varint() int64 {
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.err = errShort
		p.b = nil
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) bytes() []byte {
	n := p.uvarint()
	if n > uint64(len(p.b)) {
		p.err = errShort
		p.b = nil
		return nil
	}
	s := p.b[:n]
	p.b = p.b[n:]
	return s
}
