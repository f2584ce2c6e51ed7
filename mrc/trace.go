package mrc

import (
	"context"
	"errors"
	"io"
	"math"

	"kvsim/trace"
)

// Trace is a block-reference trace held in memory.
type Trace struct {
	Blocks   []int32 // dense block id (0..Distinct-1) of each reference, in trace order
	Starts   []int32 // Starts[r] is request r's first reference; the last entry is len(Blocks)
	Distinct int     // number of distinct blocks
}

// Requests is the number of requests.
func (t *Trace) Requests() int { return len(t.Starts) - 1 }

// FromRequests builds a Trace from raw ids, one slice per request; ids get
// dense indices in order of first appearance.
func FromRequests(reqs [][]int64) *Trace {
	b := newBuilder()
	for _, r := range reqs {
		b.add(r)
	}
	return b.trace()
}

type builder struct {
	t   Trace
	ids map[int64]int32
}

func newBuilder() *builder {
	return &builder{t: Trace{Starts: []int32{0}}, ids: map[int64]int32{}}
}

func (b *builder) add(req []int64) {
	for _, h := range req {
		id, ok := b.ids[h]
		if !ok {
			id = int32(len(b.ids))
			b.ids[h] = id
		}
		b.t.Blocks = append(b.t.Blocks, id)
	}
	b.t.Starts = append(b.t.Starts, int32(len(b.t.Blocks)))
}

func (b *builder) trace() *Trace {
	b.t.Distinct = len(b.ids)
	return &b.t
}

// Load reads a Mooncake JSONL trace with kvsim/trace's reader, keeping
// the block references and request boundaries. Errors name the file and,
// for a bad line, the line: "FILE:LINE: reason".
func Load(path string) (*Trace, error) { return LoadOptions(path, trace.Options{}) }

// LoadOptions is Load for a trace in any format (opt.Format), through the
// binary trace cache (trace.OpenCached).
func LoadOptions(path string, opt trace.Options) (*Trace, error) {
	return LoadContext(context.Background(), path, opt)
}

// LoadContext is LoadOptions that stops reading once ctx is cancelled
// (checked every 4096 requests) and returns ctx's error.
func LoadContext(ctx context.Context, path string, opt trace.Options) (*Trace, error) {
	opt.DenseOnly = true // FromReader takes a binary trace's dense ids
	r, err := trace.OpenCachedContext(ctx, path, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return fromReader(ctx, r)
}

// Read is Load from a reader; name labels errors.
func Read(rd io.Reader, name string) (*Trace, error) {
	return FromReader(trace.NewReader(rd, name, trace.Options{}))
}

// FromReader reads r (a file or a generated trace) to the end.
func FromReader(r *trace.Reader) (*Trace, error) { return fromReader(context.Background(), r) }

func fromReader(ctx context.Context, r *trace.Reader) (*Trace, error) {
	d := trace.NewDict()
	reqs, refs := r.SizeHint()
	t := &Trace{Starts: make([]int32, 1, reqs+1), Blocks: make([]int32, 0, refs)}
	if blocks, starts, n, ok := r.DenseAll(t.Blocks, t.Starts); ok { // a binary trace, whole
		t.Blocks, t.Starts, t.Distinct = blocks, starts, n
		return t, nil
	}
	var (
		req trace.Request
		ren []int32 // a binary trace's dense ids -> ours (the lines read may skip some)
	)
	for i := 1; ; i++ {
		if i&4095 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		err := r.Next(&req)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if dense, n := r.DenseIDs(); n > 0 {
			if ren == nil {
				ren = make([]int32, n)
				for i := range ren {
					ren[i] = -1
				}
			}
			for _, b := range dense {
				if ren[b] < 0 {
					ren[b] = int32(t.Distinct)
					t.Distinct++
				}
				t.Blocks = append(t.Blocks, ren[b])
			}
		} else {
			for _, h := range req.HashIDs {
				t.Blocks = append(t.Blocks, d.ID(h))
			}
		}
		if len(t.Blocks) > math.MaxInt32 {
			return nil, errors.New("trace: more than 2^31-1 block references")
		}
		t.Starts = append(t.Starts, int32(len(t.Blocks)))
	}
	if ren == nil {
		t.Distinct = d.Len()
	}
	return t, nil
}

// Sample keeps the references whose block falls in a spatial hash sample of
// rate r (SHARDS): a block is either always or never kept, so reuse
// distances among kept blocks shrink by about r, and a cache of r×N blocks
// on the sample models a cache of N on the whole trace. Requests keep their
// boundaries; ids are renumbered densely.
func Sample(t *Trace, r float64) *Trace {
	if r >= 1 {
		return t
	}
	limit := uint64(r * (1 << 63)) // compare the top 63 bits
	ren := make([]int32, t.Distinct)
	for i := range ren {
		ren[i] = -1
	}
	out := &Trace{Starts: make([]int32, 1, len(t.Starts))}
	for q := 0; q < t.Requests(); q++ {
		for _, b := range t.Blocks[t.Starts[q]:t.Starts[q+1]] {
			if mix(uint64(b))>>1 >= limit {
				continue
			}
			if ren[b] < 0 {
				ren[b] = int32(out.Distinct)
				out.Distinct++
			}
			out.Blocks = append(out.Blocks, ren[b])
		}
		out.Starts = append(out.Starts, int32(len(out.Blocks)))
	}
	return out
}

// SampledSize scales a cache size to a sample of rate r (at least 1 block).
func SampledSize(size int, r float64) int {
	return max(1, int(math.Round(float64(size)*r)))
}

// AdjustSampled turns results computed on Sample(t, r) with SampledSize
// sizes into estimates for t (SHARDS-adj, Waldspurger et al., USENIX ATC
// '17): sizes go back to the unscaled ones, accesses become the expected
// sample size r×total, and the references the sample gained or lost by
// chance count as hits. Without that, one heavy block that happens to fall
// outside the sample (the conversation trace's shared system prompt, 4% of
// references, nearly all hits) biases every point by several percent.
func AdjustSampled(res []Result, sizes []int, total int64, r float64) {
	exp := int64(math.Round(r * float64(total)))
	for i := range res {
		res[i].SizeBlocks = sizes[i%len(sizes)]
		res[i].Accesses = exp
		res[i].Misses = min(res[i].Misses, exp)
		res[i].MissRatio = 0
		if exp > 0 {
			res[i].MissRatio = float64(res[i].Misses) / float64(exp)
		}
	}
}

// mix is the splitmix64 finaliser.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
