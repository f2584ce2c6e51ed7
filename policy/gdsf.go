package policy

import (
	"fmt"
	"math"

	"kvsim/param"
)

// GDSF is GreedyDual-Size-Frequency (Cherkasova, HP Labs TR 1998): each
// block has priority H = L + freq × cost/size, the smallest H is evicted
// and the clock L rises to it, so blocks not touched for a while age out.
// freq counts hits during the current stay.
//
// cost is the recompute work a cached block saves. With no better
// information it is taken as size^cost_exponent: the default exponent 1
// makes cost/size constant (prefill time grows linearly with tokens, as in
// the core, where every block's cost is the prefill time of its tokens), so
// GDSF reduces to LFU with dynamic aging (LFU-DA); an exponent above 1 models
// attention's quadratic share and favours keeping large blocks. Ties go to
// the block touched least recently.
type GDSF struct {
	h     keyHeap[float64]
	freq  []int32
	ratio []float64 // cost/size of each block
	exp   float64
	l     float64
	seq   uint64
}

// NewGDSF returns an empty GDSF with cost = size^exp.
func NewGDSF(exp float64) *GDSF { return &GDSF{exp: exp} }

func (p *GDSF) Len() int { return p.h.Len() }

func (p *GDSF) Insert(b Block, size int64, _ int64) {
	p.freq = ensure(p.freq, b, 0)
	p.ratio = ensure(p.ratio, b, 0)
	p.freq[b] = 1
	if p.exp == 1 {
		p.ratio[b] = 1
	} else {
		p.ratio[b] = math.Pow(float64(max(size, 1)), p.exp-1)
	}
	p.push(b)
}

func (p *GDSF) push(b Block) {
	p.seq++
	p.h.push(b, p.l+float64(p.freq[b])*p.ratio[b], p.seq)
}

func (p *GDSF) Access(b Block, _ int64) {
	p.freq[b]++
	p.push(b)
}

func (p *GDSF) Remove(b Block) { p.h.remove(b) }

func (p *GDSF) Evict(_ int64, pinned Pinned) (Block, bool) {
	it, ok := p.h.popUnpinned(pinned)
	if !ok {
		return None, false
	}
	p.l = it.key
	return it.b, true
}

func init() {
	Register(Spec{Name: "gdsf", Brief: "GreedyDual-Size-Frequency, cost = size^cost_exponent",
		Params: []param.Key{{Name: "cost_exponent", Type: param.Number, Default: 1.0, Doc: "cost = size^cost_exponent; 0 is GreedyDual-Frequency"}},
		New: func(c Config) (Policy, error) {
			e := c.Params["cost_exponent"]
			if e < 0 || math.IsNaN(e) || math.IsInf(e, 0) {
				return nil, fmt.Errorf("gdsf: cost_exponent must be >= 0, got %g", e)
			}
			return NewGDSF(e), nil
		}})
}
