package trace

import (
	"context"
	"fmt"
	"io"
	"strconv"
)

// genSource feeds a Reader from the generator: the values Generate would
// write, without formatting and parsing them.
type genSource struct {
	ctx context.Context
	c   GenConfig
	g   *generator
	err error // the config's error, reported by the first Next
	rq  genRequest
}

// Generated is a Reader over the synthetic trace c describes: the same
// requests and errors as NewReader over Generate's output, with the same
// options, without the JSON in between. name labels errors; ctx stops a
// long generation, checked every 4096 lines.
func Generated(ctx context.Context, c GenConfig, name string, opt Options) *Reader {
	r := NewReader(nil, name, opt)
	r.br = nil
	r.gen = &genSource{ctx: ctx, c: c}
	r.gen.g, r.gen.err = newGenerator(c)
	return r
}

// rewind restarts the generator.
func (s *genSource) rewind() { s.g, s.err = newGenerator(s.c) }

// generated is raw for a generated trace.
func (r *Reader) generated(v *values) (ids []int64, reason string, empty bool, err error) {
	s := r.gen
	if r.line&4095 == 4095 {
		if err := s.ctx.Err(); err != nil {
			return nil, "", false, err
		}
	}
	if s.err != nil {
		return nil, "", false, fmt.Errorf("synthetic: %w", s.err)
	}
	if err := s.g.next(&s.rq); err == io.EOF {
		return nil, "", false, err
	} else if err != nil {
		return nil, "", false, fmt.Errorf("synthetic: %w", err)
	}
	r.line++
	q := &s.rq
	// The checks the parser makes of what Generate writes can fail only
	// here: token counts past MaxTokens and a block size other than the
	// generator's.
	switch {
	case q.input > MaxTokens:
		return nil, fieldNames[fInput] + " out of range (at most " + strconv.Itoa(MaxTokens) + " tokens)", false, nil
	case q.output > MaxTokens:
		return nil, fieldNames[fOutput] + " out of range (at most " + strconv.Itoa(MaxTokens) + " tokens)", false, nil
	}
	if need := numBlocks(q.input, r.opt.BlockTokens); need != len(q.ids) {
		return nil, "input_length " + strconv.Itoa(q.input) + " needs " + strconv.Itoa(need) +
			" hash_ids, got " + strconv.Itoa(len(q.ids)), false, nil
	}
	v.arrival, v.input, v.output = q.ms*1e6, q.input, q.output
	r.p.ids = append(r.p.ids[:0], q.ids...)
	return r.p.ids, "", false, nil
}
