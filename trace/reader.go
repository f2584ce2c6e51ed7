package trace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// DefaultBlockTokens is the Mooncake block size.
const DefaultBlockTokens = 512

// MaxLineBytes bounds one line so a corrupt file cannot exhaust memory.
const MaxLineBytes = 64 << 20

const bufSize = 256 << 10

// MaxArrival is the latest arrival a trace may ask for, in nanoseconds after
// its first request: the simulated-time limit (core.MaxTime, about 146
// years), so that every sum of two simulated times fits in an int64.
const MaxArrival int64 = 1<<62 - 1

// MaxTokens bounds input_length and output_length: no model has a context
// of 2^31 tokens, and the bound keeps every byte and time product of one
// request within int64.
const MaxTokens = 1<<31 - 1

// Request is one trace line.
type Request struct {
	// Arrival is nanoseconds after the first request of the trace (the
	// timestamps are rebased: real traces carry epoch times), divided by
	// Options.Speedup.
	Arrival      int64
	InputTokens  int     // prompt tokens
	OutputTokens int     // generated tokens
	HashIDs      []int64 // raw ids as in the file; the slice is reused between Next calls
	Line         int     // 1-based line number in the file
	// Parent is the line of the turn this one follows in its session
	// (closed-loop replay: it arrives Think after that turn completes);
	// 0: none, the request arrives at its trace time.
	Parent int
	Think  int64 // ns; meaningful only with Parent
}

// Options control a Reader.
type Options struct {
	BlockTokens  int  // tokens per block, default 512; len(hash_ids) must equal ceil(input_length/BlockTokens)
	SkipBadLines bool // count and skip malformed lines instead of failing
	Limit        int  // stop after this many requests (0 = all)
	// Speedup divides every arrival time: 2 replays the trace at twice its
	// request rate, the same requests in the same order (0 or 1: as
	// recorded).
	Speedup float64
	// Format is the trace's format: one of Formats ("" is mooncake). Not
	// in a run's id: the scenario's workload.format is.
	Format string `json:"-"`
	// DenseOnly: a reader of a binary trace leaves Request.HashIDs empty;
	// DenseIDs has the blocks (for consumers of dense ids only: mrc). Not
	// an input of a run (not in its run_id).
	DenseOnly bool `json:"-"`
}

// LineError is a problem with one line (or with reading at that line).
// Error() is a single line: "FILE:LINE: reason".
type LineError struct {
	File   string
	Line   int
	Reason string
	Err    error // underlying I/O error, if any
}

func (e *LineError) Error() string { return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Reason }
func (e *LineError) Unwrap() error { return e.Err }

// Reader streams requests from a Mooncake JSONL trace.
type Reader struct {
	src    io.Reader
	closer io.Closer // set by Open
	br     *bufio.Reader
	name   string
	opt    Options

	p    parser
	long []byte // assembles lines longer than the bufio buffer

	maxLine int // MaxLineBytes; tests lower it

	line    int   // lines consumed
	n       int   // requests returned
	last    int64 // timestamp (ns) of the previous good request
	base    int64 // timestamp (ns) of the first good request
	skipped int
	first   error
	err     error // sticky: io.EOF or the fatal error
	closed  bool

	gen *genSource // set by Generated: lines come from the generator
	bin *binSource // set when reading a binary trace (the cache)

	kind    int       // the format's ID: formats[kind]
	vals    values    // the line Next reads
	build   bool      // raw values for the binary cache: no block-count check, no regrouping
	csv     csvState  // azure, burstgpt
	cur     linkState // the session fields of the line raw just read
	sess    []sessEntry
	sessIDs map[string]int32 // mooncake session_id -> index into sess
	chatIDs map[int64]int32  // bailian chat_id -> index into sess
	chain   []int64          // bailian: chained 16-token ids
	dense   []int32          // binary trace: dense ids of the last request
	optErr  error            // options the format cannot honour: every Next's error
}

// linkState names the sessions of one line: lookup (1-based index into
// Reader.sess, 0: none) is the entry of its parent, store the entry it
// becomes; delay is the think time it states (ns, -1: none).
type linkState struct {
	lookup, store int32
	delay         int64
}

// sessEntry is the latest good request of a session (mooncake) or chat
// (bailian).
type sessEntry struct {
	line int
	at   int64
}

// NewReader reads a trace from r; name is used in error messages.
func NewReader(r io.Reader, name string, opt Options) *Reader {
	if opt.BlockTokens <= 0 {
		opt.BlockTokens = DefaultBlockTokens
	}
	rd := &Reader{src: r, br: bufio.NewReaderSize(r, bufSize), name: name, opt: opt, maxLine: MaxLineBytes}
	k, err := checkOptions(opt)
	if err != nil {
		rd.optErr = errors.New("trace: " + name + ": " + err.Error())
		rd.err = rd.optErr
	}
	rd.kind = k
	rd.p.kind = k
	return rd
}

// Open opens the trace file at path (its copy if Spool made one); Close
// closes it.
func Open(path string, opt Options) (*Reader, error) {
	if opt.BlockTokens <= 0 {
		opt.BlockTokens = DefaultBlockTokens
	}
	if _, err := checkOptions(opt); err != nil {
		return nil, errors.New("trace: " + path + ": " + err.Error())
	}
	if k, _ := formatKind(opt.Format); formats[k].Magic != "" {
		return openConverted(context.Background(), path, k, opt)
	}
	f, err := os.Open(resolve(path))
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err) // *PathError names the file
	}
	r := NewReader(f, path, opt)
	r.closer = f
	return r, nil
}

// openConverted reads a binary format's file (kind k): converted whole,
// then read as Mooncake JSONL.
func openConverted(ctx context.Context, path string, k int, opt Options) (*Reader, error) {
	b, err := convertFile(ctx, path, k, opt.BlockTokens)
	if err != nil {
		return nil, err
	}
	opt.Format = ""
	return NewReader(bytes.NewReader(b), path, opt), nil
}

// Close closes the file opened by Open; it is a no-op for NewReader.
func (r *Reader) Close() error {
	r.closed = true
	r.err = errors.New("trace: " + r.name + ": reader closed")
	if r.bin != nil {
		r.bin.close()
	}
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	return c.Close()
}

// Rewind restarts reading from the beginning of a seekable source, keeping
// the buffers, so multi-pass consumers (e.g. a next-use index followed by the
// simulation) re-read the trace without allocating. A generated trace
// restarts from its seed.
func (r *Reader) Rewind() error {
	if r.gen != nil {
		if r.closed {
			return r.err
		}
		r.gen.rewind()
		r.restart()
		return nil
	}
	if r.bin != nil {
		if r.closed {
			return r.err
		}
		r.bin.rewind()
		r.restart()
		return nil
	}
	s, ok := r.src.(io.Seeker)
	if !ok {
		return errors.New("trace: " + r.name + ": cannot rewind a non-seekable source")
	}
	if r.closed {
		return r.err
	}
	if _, err := s.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("trace: %s: rewind: %w", r.name, err)
	}
	r.br.Reset(r.src)
	r.restart()
	return nil
}

// restart forgets what was read, keeping the buffers.
func (r *Reader) restart() {
	r.line, r.n, r.last, r.base, r.skipped, r.first, r.err = 0, 0, 0, 0, 0, nil, r.optErr
	r.csv.header = false
	clear(r.sess)
}

// Skipped is the number of bad lines skipped (SkipBadLines only).
func (r *Reader) Skipped() int { return r.skipped }

// FirstSkipped is the error of the first skipped line, or nil.
func (r *Reader) FirstSkipped() error { return r.first }

// Next fills req with the next request. It returns io.EOF at the end and a
// *LineError for a bad line (unless SkipBadLines) or a read error; errors are
// sticky. req.HashIDs is only valid until the next call.
func (r *Reader) Next(req *Request) error {
	if r.err != nil {
		return r.err
	}
	if r.opt.Limit > 0 && r.n >= r.opt.Limit {
		r.err = io.EOF
		return r.err
	}
	for {
		v := &r.vals // a field: a format's line func is called through a value, so a local would escape
		*v = values{}
		r.cur = linkState{delay: -1}
		ids, reason, skip, err := r.raw(v)
		if err != nil {
			r.err = err
			return err
		}
		if skip {
			continue // a blank line
		}
		if reason == "" && r.n > 0 && v.arrival < r.last {
			reason = "timestamp goes backwards (" + fmtMS(v.arrival) + " ms after " + fmtMS(r.last) + " ms)"
		}
		var at int64
		if reason == "" {
			at, reason = r.arrival(v.arrival)
		}
		if reason == "" {
			if r.n == 0 {
				r.base = v.arrival
			}
			r.last = v.arrival
			r.n++
			req.Arrival = at
			req.InputTokens = v.input
			req.OutputTokens = v.output
			req.HashIDs = ids
			req.Line = r.line
			r.link(req, at)
			return nil
		}
		e := &LineError{File: r.name, Line: r.line, Reason: reason}
		if !r.opt.SkipBadLines {
			r.err = e
			return e
		}
		r.skipped++
		if r.first == nil {
			r.first = e
		}
	}
}

// raw takes the next line's values from the file or the generator: its ids,
// or the reason it is bad, or empty for a blank line, or a fatal error.
func (r *Reader) raw(v *values) (ids []int64, reason string, empty bool, err error) {
	if r.gen != nil {
		return r.generated(v)
	}
	if r.bin != nil {
		return r.cached(v)
	}
	line, tooLong, err := r.readLine()
	if err != nil {
		if err != io.EOF {
			err = &LineError{File: r.name, Line: r.line + 1, Reason: "read error: " + oneLine(err.Error()), Err: err}
		}
		return nil, "", false, err
	}
	r.line++
	if tooLong {
		return nil, "line longer than " + strconv.Itoa(r.maxLine) + " bytes", false, nil
	}
	if r.line == 1 {
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // tolerate a UTF-8 BOM
	}
	if blank(line) {
		return nil, "", true, nil
	}
	return formats[r.kind].line(r, line, v)
}

// mooncakeLine is raw for a Mooncake line.
func (r *Reader) mooncakeLine(line []byte, v *values) (ids []int64, reason string, empty bool, err error) {
	bt := r.opt.BlockTokens
	if r.build {
		bt = 0 // checked when the cache is read, at the block size asked then
	}
	if reason = r.p.parse(line, bt, v); reason == "" && r.p.ext.hasCall {
		// An agentic call: it follows its parent call (delay: the tool wait).
		r.cur.store = r.intern(callKey(r.p.ext.sess[:0], r.p.ext.call))
		r.cur.lookup = 0
		if r.p.ext.pcall >= 0 {
			r.cur.lookup = r.intern(callKey(r.p.ext.sess[:0], r.p.ext.pcall))
		}
		r.cur.delay = r.p.ext.delay
	} else if reason == "" && r.p.ext.hasSess {
		r.cur.store = r.intern(r.p.ext.sess)
		r.cur.lookup = r.cur.store
		r.cur.delay = r.p.ext.delay
	} else if reason == "" {
		r.cur.delay = r.p.ext.delay
	}
	return r.p.ids, reason, false, nil
}

// callKey is a call_id's key among the sessions: 'c' then its digits, so
// it never meets a session_id's ('s' or 'i').
func callKey(b []byte, id int64) []byte {
	return strconv.AppendInt(append(b, 'c'), id, 10)
}

// intern gives a mooncake session its 1-based index into sess.
func (r *Reader) intern(key []byte) int32 {
	if i, ok := r.sessIDs[string(key)]; ok {
		return i
	}
	if r.sessIDs == nil {
		r.sessIDs = map[string]int32{}
	}
	i := int32(len(r.sessIDs) + 1)
	r.sessIDs[string(key)] = i
	return i
}

// link fills req's Parent and Think from its session and records it as
// the session's latest turn.
func (r *Reader) link(req *Request, at int64) {
	req.Parent, req.Think = 0, 0
	c := r.cur
	if c.lookup > 0 && int(c.lookup) <= len(r.sess) {
		if e := r.sess[c.lookup-1]; e.line > 0 {
			req.Parent = e.line
			if c.delay >= 0 {
				req.Think = r.scale(c.delay)
			} else {
				req.Think = at - e.at
			}
		}
	}
	if c.store > 0 {
		for int(c.store) > len(r.sess) {
			r.sess = append(r.sess, sessEntry{})
		}
		r.sess[c.store-1] = sessEntry{line: r.line, at: at}
	}
}

// scale divides a duration from the trace by the speedup, as arrivals are.
func (r *Reader) scale(ns int64) int64 {
	if sp := r.opt.Speedup; sp > 0 && sp != 1 {
		f := math.Round(float64(ns) / sp)
		if !(f < float64(MaxArrival)) {
			return MaxArrival
		}
		return int64(f)
	}
	return ns
}

// arrival is the simulated arrival of a request stamped ts (ns): rebased to
// the first request, divided by the speedup, and within MaxArrival.
func (r *Reader) arrival(ts int64) (int64, string) {
	if r.n == 0 {
		return 0, "" // the first request starts the clock
	}
	rel := ts - r.base // >= 0: timestamps never go backwards
	sp := r.opt.Speedup
	if sp <= 0 || sp == 1 {
		if rel > MaxArrival {
			return 0, "timestamp " + fmtMS(ts) + " ms is " + fmtYears(float64(rel), 1) + " after the first request's (" +
				fmtMS(r.base) + " ms): past the simulated-time limit of " + fmtYears(float64(MaxArrival), 1)
		}
		return rel, ""
	}
	f := math.Round(float64(rel) / sp)
	if !(f < float64(MaxArrival)) { // float64(MaxArrival) rounds up to 2^62, one past the limit
		return 0, "timestamp " + fmtMS(ts) + " ms is " + fmtYears(float64(rel), 1) + " after the first request's (" +
			fmtMS(r.base) + " ms), " + fmtYears(float64(rel), sp) + " at workload.speedup " + strconv.FormatFloat(sp, 'g', -1, 64) +
			": past the simulated-time limit of " + fmtYears(float64(MaxArrival), 1)
	}
	return int64(f), ""
}

// fmtYears renders ns/div nanoseconds for limit messages (dividing last,
// so that a tiny speedup does not overflow to +Inf).
func fmtYears(ns, div float64) string {
	const year = 365.25 * 24 * 3600 * 1e9
	switch {
	case ns/div >= year:
		return strconv.FormatFloat(ns/year/div, 'g', 4, 64) + " years"
	case ns/div >= 86400e9:
		return strconv.FormatFloat(ns/86400e9/div, 'g', 4, 64) + " days"
	}
	return strconv.FormatFloat(ns/1e9/div, 'g', 4, 64) + " s"
}

// readLine returns the next line including its '\n' (if any). A line over
// MaxLineBytes is consumed and reported through tooLong so it can be skipped.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	line, err = r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.long = append(r.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.br.ReadSlice('\n')
			tooLong = tooLong || len(r.long)+len(line) > r.maxLine
			if !tooLong {
				r.long = append(r.long, line...)
			}
		}
		line = r.long
	}
	tooLong = tooLong || len(line) > r.maxLine
	if err == io.EOF && (len(line) > 0 || tooLong) {
		err = nil // last line without '\n'; EOF comes on the next call
	}
	if err != nil {
		return nil, false, err
	}
	return line, tooLong, nil
}

func blank(b []byte) bool {
	for _, c := range b {
		if !isSpace(c) {
			return false
		}
	}
	return true
}

// BlockTokens is the number of tokens in block i of an input of the given
// length: blockTokens except for a partial last block, 0 outside the input.
func BlockTokens(input, blockTokens, i int) int {
	if blockTokens <= 0 {
		blockTokens = DefaultBlockTokens
	}
	if i < 0 || input <= 0 || i >= numBlocks(input, blockTokens) {
		return 0
	}
	return min(blockTokens, input-i*blockTokens)
}

// numBlocks is ceil(input/bt) without overflow.
func numBlocks(input, bt int) int {
	n := input / bt
	if input%bt != 0 {
		n++
	}
	return n
}

// fmtMS prints nanoseconds as milliseconds, without a fraction when whole.
func fmtMS(ns int64) string {
	if ns%1e6 == 0 {
		return strconv.FormatInt(ns/1e6, 10)
	}
	return strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64)
}

// oneLine keeps error messages to a single line whatever an io.Reader says.
func oneLine(s string) string {
	return string(bytes.ReplaceAll(bytes.ReplaceAll([]byte(s), []byte("\r"), []byte(`\r`)), []byte("\n"), []byte(`\n`)))
}
