package events

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Source is one engine endpoint to subscribe to, with its replay endpoint
// (vLLM's ROUTER socket) when it has one.
type Source struct {
	Endpoint string
	Replay   string
}

// RecordOptions tune Capture.
type RecordOptions struct {
	// FlushEvery bounds what a kill -9 loses.
	FlushEvery time.Duration
	// ReplayTimeout bounds one replay request.
	ReplayTimeout time.Duration
	// Logf reports gaps and malformed frames as they happen.
	Logf func(format string, args ...any)
	// IdlePoll: with a replay endpoint, a source quiet this long is asked
	// for anything past its last frame (0: a second).
	IdlePoll time.Duration
	// Ready, when set, is called once every subscriber is connected.
	Ready func()
	// Now stamps receive times (tests may fix it).
	Now func() time.Time
	// RedialMin and RedialMax bound the wait between attempts to reach a
	// source whose connection failed (0: 100 ms and 5 s); the recorder
	// redials until stopped.
	RedialMin, RedialMax time.Duration
}

// SourceSummary is what Capture saw from one source.
type SourceSummary struct {
	Endpoint   string
	Frames     int64
	Events     int64
	Malformed  int64
	Gaps       int64
	Refilled   uint64 // sequence numbers fetched from the replay endpoint
	Unfilled   uint64 // sequence numbers lost for good
	Restarts   int64  // sequence numbers that went backwards: new epochs
	Outages    int64  // connections lost (and redialled)
	Duplicates int64  // live frames a catch-up replay had brought already
	ReplayErrs int64
}

// Capture subscribes to every source and appends what arrives to w until
// ctx ends; it returns ctx's error then, or the first write error.
func Capture(ctx context.Context, sources []Source, w *Writer, opt RecordOptions) ([]SourceSummary, error) {
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = 200 * time.Millisecond
	}
	if opt.ReplayTimeout <= 0 {
		opt.ReplayTimeout = 5 * time.Second
	}
	if opt.IdlePoll <= 0 {
		opt.IdlePoll = time.Second
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.RedialMin <= 0 {
		opt.RedialMin = 100 * time.Millisecond
	}
	if opt.RedialMax < opt.RedialMin {
		opt.RedialMax = max(opt.RedialMin, 5*time.Second)
	}
	for i, s := range sources {
		if err := w.Append(&Record{Type: RecSource, Instance: uint32(i), Rank: -1, Endpoint: s.Endpoint, Replay: s.Replay}); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recs := make(chan []Record, 1024)
	sums := make([]SourceSummary, len(sources))
	subs := make([]zmq4.Socket, len(sources))
	for i, s := range sources {
		// No automatic reconnect: the library's redials from inside its
		// connection teardown; receive redials itself, and says so.
		sub := zmq4.NewSub(sctx, zmq4.WithDialerMaxRetries(-1), zmq4.WithDialerRetry(100*time.Millisecond))
		if err := sub.Dial(s.Endpoint); err != nil {
			for _, o := range subs[:i] {
				o.Close()
			}
			sub.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("subscribe to %s: %w", s.Endpoint, err)
		}
		if err := sub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
			return nil, fmt.Errorf("subscribe to %s: %w", s.Endpoint, err)
		}
		subs[i] = sub
		sums[i].Endpoint = s.Endpoint
	}
	if opt.Ready != nil {
		opt.Ready()
	}
	var wg sync.WaitGroup
	for i := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &sourceState{inst: uint32(i), src: sources[i], sum: &sums[i], opt: &opt, out: recs, ctx: sctx, dupFrom: ^uint64(0)}
			st.loop(subs[i])
		}()
	}
	go func() { wg.Wait(); close(recs) }()

	tick := time.NewTicker(opt.FlushEvery)
	defer tick.Stop()
	var werr error
	dirty := false
	for {
		select {
		case batch, ok := <-recs:
			if !ok {
				err := w.Flush()
				if werr != nil {
					return sums, werr
				}
				if err != nil {
					return sums, err
				}
				return sums, ctx.Err()
			}
			for i := range batch {
				if werr == nil {
					werr = w.Append(&batch[i])
				}
			}
			dirty = true
			if werr != nil {
				cancel()
			}
		case <-tick.C:
			if dirty && werr == nil {
				werr = w.Flush()
				dirty = false
				if werr != nil {
					cancel()
				}
			}
		}
	}
}

type sourceState struct {
	inst    uint32
	src     Source
	sum     *SourceSummary
	opt     *RecordOptions
	out     chan<- []Record
	ctx     context.Context
	started bool
	next    uint64 // next expected sequence number
	dupFrom uint64 // live frames in [dupFrom, next) came by a catch-up already
}

// inbound is what the receiving goroutine hands the loop: a message, or
// news of the connection.
type inbound struct {
	msg      zmq4.Msg
	lost     error // the connection failed with this
	back     bool  // redialled after lost
	attempts int
}

// receive reads sub until ctx ends; a failed receive (the engine went
// away) closes the socket and redials with a bounded backoff, reporting
// the loss and the return.
func (s *sourceState) receive(sub zmq4.Socket, in chan<- inbound) {
	defer close(in)
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	emit := func(v inbound) bool {
		select {
		case in <- v:
			return true
		case <-s.ctx.Done():
			return false
		}
	}
	for {
		msg, err := sub.Recv()
		if err == nil {
			if !emit(inbound{msg: msg}) {
				return
			}
			continue
		}
		if s.ctx.Err() != nil {
			return
		}
		sub.Close()
		sub = nil
		if !emit(inbound{lost: err}) {
			return
		}
		var n int
		if sub, n = s.redial(); sub == nil {
			return
		}
		if !emit(inbound{back: true, attempts: n}) {
			return
		}
	}
}

// redial dials the endpoint again, waiting RedialMin, doubling up to
// RedialMax, between attempts; nil when ctx ends first.
func (s *sourceState) redial() (zmq4.Socket, int) {
	wait := s.opt.RedialMin
	for n := 1; ; n++ {
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
			return nil, n
		}
		sub := zmq4.NewSub(s.ctx, zmq4.WithDialerMaxRetries(0))
		if err := sub.Dial(s.src.Endpoint); err == nil {
			if err := sub.SetOption(zmq4.OptionSubscribe, ""); err == nil {
				return sub, n
			}
		}
		sub.Close()
		wait = min(2*wait, s.opt.RedialMax)
	}
}

func (s *sourceState) loop(sub zmq4.Socket) {
	msgs := make(chan inbound, 64)
	go s.receive(sub, msgs)
	// PUB/SUB cannot tell a subscriber what it missed before its first
	// frame or after its last: with a replay endpoint, a quiet second asks
	// it for anything past the last frame.
	tick := time.NewTicker(s.opt.IdlePoll)
	defer tick.Stop()
	quiet := false
	down := false // between a lost connection and its return
	var lostAt time.Time
	for {
		var in inbound
		var ok bool
		select {
		case in, ok = <-msgs:
			if !ok {
				return
			}
			quiet = false
		case <-tick.C:
			if quiet && !down && s.src.Replay != "" {
				if !s.send(s.catchUp()) {
					return
				}
			}
			quiet = true
			continue
		case <-s.ctx.Done():
			return
		}
		if in.lost != nil {
			down, lostAt = true, s.opt.Now()
			s.sum.Outages++
			s.opt.Logf("%s: connection lost (%v); redialling every %v..%v until stopped", s.src.Endpoint, in.lost, s.opt.RedialMin, s.opt.RedialMax)
			// A catch-up window does not outlive the connection: what
			// comes back is either the same engine (its numbers go on) or a
			// restarted one (they start again).
			s.dupFrom = ^uint64(0)
			if !s.send([]Record{{Type: RecOutage, Instance: s.inst, Rank: -1, Recv: lostAt.UnixNano(), Seq: s.next, Note: in.lost.Error()}}) {
				return
			}
			continue
		}
		if in.back {
			down = false
			s.opt.Logf("%s: reconnected after %v (%d attempts)", s.src.Endpoint, s.opt.Now().Sub(lostAt).Round(time.Millisecond), in.attempts)
			continue
		}
		msg := in.msg
		now := s.opt.Now().UnixNano()
		topic, seq, payload, ferr := splitFrames(msg.Frames)
		if ferr != nil {
			s.malformed(now, payload, ferr)
			continue
		}
		b, derr := Decode(payload)
		if derr != nil {
			s.malformed(now, payload, derr)
			continue
		}
		var out []Record
		if s.started && seq < s.next {
			if seq >= s.dupFrom {
				s.sum.Duplicates++ // already had it from a catch-up replay
				continue
			}
			// A restarted engine counts from 0 again: a new epoch, not a
			// gap of nearly 2^64 numbers.
			s.sum.Restarts++
			s.opt.Logf("%s: sequence went back from %d to %d: engine restarted, a new epoch", s.src.Endpoint, s.next-1, seq)
			out = append(out, Record{Type: RecEpoch, Instance: s.inst, Rank: -1, Recv: now, Seq: seq, Count: s.next, Note: "sequence numbers started again"})
			s.started, s.dupFrom = false, ^uint64(0)
		}
		if !s.started && seq > 0 {
			// Engines count from 0: what came before is asked for (the
			// replay buffer holds the recent past only).
			s.opt.Logf("%s: joined at sequence number %d", s.src.Endpoint, seq)
			out = s.fill(0, seq, out)
		}
		if s.started && seq > s.next {
			out = s.fill(s.next, seq, out)
		}
		s.started = true
		s.next = seq + 1
		s.sum.Frames++
		s.sum.Events += int64(len(b.Events))
		out = append(out, Record{Type: RecFrame, Instance: s.inst, Rank: b.Rank, Recv: now, Seq: seq, Topic: topic, Payload: payload})
		if !s.send(out) {
			return
		}
	}
}

func (s *sourceState) send(out []Record) bool {
	if len(out) == 0 {
		return true
	}
	select {
	case s.out <- out:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// catchUp asks the replay endpoint for every batch past the last one
// received; live frames it returns are then skipped as duplicates.
func (s *sourceState) catchUp() []Record {
	from := uint64(0)
	if s.started {
		from = s.next
	}
	got := map[uint64]bool{}
	out, err := s.replay(from, endSeq, got, nil)
	if err != nil {
		s.sum.ReplayErrs++
		s.opt.Logf("%s: catch-up replay from %s failed: %v", s.src.Endpoint, s.src.Replay, err)
	}
	if len(out) == 0 {
		return nil
	}
	// Frames in sequence order; a hole in them is a gap like any other.
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) })
	var all []Record
	next := from
	for _, r := range out {
		if r.Seq > next {
			all = s.fill(next, r.Seq, all)
		}
		all = append(all, r)
		next = r.Seq + 1
	}
	s.started, s.next, s.dupFrom = true, next, from
	return all
}

func (s *sourceState) malformed(now int64, payload []byte, err error) {
	s.sum.Malformed++
	s.opt.Logf("%s: skipped a malformed frame: %v", s.src.Endpoint, err)
	select {
	case s.out <- []Record{{Type: RecMalformed, Instance: s.inst, Rank: -1, Recv: now, Note: err.Error(), Payload: payload}}:
	case <-s.ctx.Done():
	}
}

// splitFrames takes [topic, seq, payload] (or [seq, payload]).
func splitFrames(fr [][]byte) (topic string, seq uint64, payload []byte, err error) {
	switch len(fr) {
	case 3:
		topic, fr = string(fr[0]), fr[1:]
	case 2:
	default:
		if len(fr) > 0 {
			payload = fr[len(fr)-1]
		}
		return "", 0, payload, fmt.Errorf("%w: %d frames, want [topic, seq, payload]", ErrMalformed, len(fr))
	}
	if len(fr[0]) != 8 {
		return "", 0, fr[1], fmt.Errorf("%w: sequence frame of %d bytes, want 8", ErrMalformed, len(fr[0]))
	}
	return topic, binary.BigEndian.Uint64(fr[0]), fr[1], nil
}

// fill asks the replay endpoint for [from, to) and appends what it gets;
// what it cannot get becomes gap records.
func (s *sourceState) fill(from, to uint64, out []Record) []Record {
	s.sum.Gaps++
	got := map[uint64]bool{}
	if s.src.Replay == "" {
		s.opt.Logf("%s: missed sequence numbers %d..%d and no --replay endpoint to refill them", s.src.Endpoint, from, to-1)
	} else {
		var err error
		out, err = s.replay(from, to, got, out)
		if err != nil {
			s.sum.ReplayErrs++
			s.opt.Logf("%s: replay from %s failed: %v", s.src.Endpoint, s.src.Replay, err)
		}
	}
	// Runs of what is still missing.
	for q := from; q < to; {
		if got[q] {
			q++
			continue
		}
		start := q
		for q < to && !got[q] {
			q++
		}
		n := q - start
		s.sum.Unfilled += n
		note := "no replay endpoint"
		if s.src.Replay != "" {
			note = "not in the replay buffer"
			s.opt.Logf("%s: sequence numbers %d..%d could not be refilled from %s", s.src.Endpoint, start, q-1, s.src.Replay)
		}
		out = append(out, Record{Type: RecGap, Instance: s.inst, Rank: -1, Recv: s.opt.Now().UnixNano(), Seq: start, Count: n, Note: note})
	}
	return out
}

// endSeq ends a replay: -1 as a signed 8-byte integer.
const endSeq = ^uint64(0)

func (s *sourceState) replay(from, to uint64, got map[uint64]bool, out []Record) ([]Record, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opt.ReplayTimeout)
	defer cancel()
	d := zmq4.NewDealer(ctx, zmq4.WithDialerMaxRetries(3))
	defer d.Close()
	if err := d.Dial(s.src.Replay); err != nil {
		return out, err
	}
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], from)
	// The empty delimiter makes the request look like REQ's to the ROUTER.
	if err := d.Send(zmq4.NewMsgFrom([]byte{}, req[:])); err != nil {
		return out, err
	}
	for {
		msg, err := d.Recv()
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return out, fmt.Errorf("no end of replay within %v", s.opt.ReplayTimeout)
			}
			return out, err
		}
		fr := msg.Frames
		if len(fr) > 0 && len(fr[0]) == 0 {
			fr = fr[1:]
		}
		if len(fr) < 1 || len(fr[0]) != 8 {
			return out, fmt.Errorf("%w: replay reply of %d frames", ErrMalformed, len(msg.Frames))
		}
		seq := binary.BigEndian.Uint64(fr[0])
		if seq == endSeq {
			return out, nil
		}
		if seq < from || seq >= to || got[seq] || len(fr) < 2 {
			continue
		}
		payload := fr[1]
		b, err := Decode(payload)
		if err != nil {
			s.sum.Malformed++
			continue
		}
		got[seq] = true
		s.sum.Refilled++
		s.sum.Frames++
		s.sum.Events += int64(len(b.Events))
		out = append(out, Record{Type: RecFrame, Instance: s.inst, Rank: b.Rank, Recv: s.opt.Now().UnixNano(), Seq: seq, Replayed: true, Payload: payload})
	}
}
