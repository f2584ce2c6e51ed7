// Package workload turns trace files into the core's request stream: raw
// hash ids become dense block indices (in order of first appearance), and
// offline policies get their view of the future.
//
// Requests without hash ids (hashless formats) get them from Inject, a
// layered model of shared prefixes (system prompt, tenant prefixes,
// multi-turn sessions) drawn from a seed; Fit searches its parameters for
// a hashed trace's LRU curve. Profile streams a trace's one-line summary.
//
// workload imports trace and core; never sim or hw, so both bodies share it.
package workload

import (
	"fmt"
	"io"
	"math"
	"sort"

	"kvsim/core"
	"kvsim/policy"
	"kvsim/trace"
)

// Source adapts a trace.Reader (a file or a generated trace) to
// core.Source and counts what it saw.
type Source struct {
	r    *trace.Reader
	dict *trace.Dict
	tr   trace.Request
	inj  *Injector // nil: the trace's own ids

	trace.Counts       // what it has read
	Injected     int64 // requests given ids by the injector
}

// NewSource reads requests from r, mapping ids through dict (which may be
// shared so several passes give the same dense ids).
func NewSource(r *trace.Reader, dict *trace.Dict) *Source {
	return &Source{r: r, dict: dict}
}

// Next implements core.Source.
func (s *Source) Next(out *core.Request) error {
	if err := s.r.Next(&s.tr); err != nil {
		return err
	}
	if s.inj != nil && s.inj.Applies(&s.tr) {
		s.inj.Apply(&s.tr)
		s.Injected++
	}
	out.Seq = s.Requests
	out.Line = s.tr.Line
	out.Arrival = s.tr.Arrival
	out.InputTokens = s.tr.InputTokens
	out.OutputTokens = s.tr.OutputTokens
	out.Blocks = out.Blocks[:0]
	if s.dict.Len() > math.MaxInt32-len(s.tr.HashIDs) { // dense ids are int32
		return fmt.Errorf("line %d: more than %d distinct blocks: too many for one run", s.tr.Line, math.MaxInt32)
	}
	for _, h := range s.tr.HashIDs {
		out.Blocks = append(out.Blocks, s.dict.ID(h))
	}
	s.Add(&s.tr)
	return nil
}

// Session is the last request's place in its session (trace.Request's
// Parent line and Think time).
func (s *Source) Session() (parent int, think int64) { return s.tr.Parent, s.tr.Think }

// Inject has s give the requests it reads ids by in's model (before they
// are counted and mapped); nil keeps the trace's own.
func (s *Source) Inject(in *Injector) { s.inj = in }

// Distinct is the number of distinct blocks seen so far.
func (s *Source) Distinct() int { return s.dict.Len() }

// Skipped is the number of malformed lines skipped.
func (s *Source) Skipped() int { return s.r.Skipped() }

// FirstSkipped is the error of the first skipped line, or nil.
func (s *Source) FirstSkipped() error { return s.r.FirstSkipped() }

// Future knows, for every block, the positions in the trace (Request.Seq)
// of the requests that reference it: Belady's future in reference order.
// The core tells Belady which request it serves (policy.Sequencer), so a
// reference by a request already queued is still ahead of it; keyed by
// arrival time and asked at admission time it would be in the past.
type Future struct {
	start []int32 // CSR offsets per block
	seqs  []int64 // per block, ascending
}

// BuildFuture reads src to the end. Memory is proportional to the number of
// block references: this is an offline oracle.
func BuildFuture(src core.Source) (*Future, error) {
	var r core.Request
	type ref struct {
		b   core.Block
		seq int64
	}
	var refs []ref
	nb := 0
	for {
		err := src.Next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, b := range r.Blocks {
			refs = append(refs, ref{b, r.Seq})
			nb = max(nb, int(b)+1)
		}
	}
	// Stable: each block's references stay in trace order.
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].b < refs[j].b })
	f := &Future{start: make([]int32, nb+1), seqs: make([]int64, len(refs))}
	for i, x := range refs {
		f.start[x.b+1]++
		f.seqs[i] = x.seq
	}
	for b := 0; b < nb; b++ {
		f.start[b+1] += f.start[b]
	}
	return f, nil
}

// NextUse implements policy.Future: the position of the first request
// after seq that references b.
func (f *Future) NextUse(b policy.Block, seq int64) int64 {
	if int(b)+1 >= len(f.start) {
		return math.MaxInt64
	}
	ss := f.seqs[f.start[b]:f.start[b+1]]
	i := sort.Search(len(ss), func(i int) bool { return ss[i] > seq })
	if i == len(ss) {
		return math.MaxInt64
	}
	return ss[i]
}
