package sim

// Series is the state of a run sampled over virtual time: tier occupancy,
// link utilisation and request counts. Its size is bounded: when it would
// pass MaxPoints, neighbouring points are merged and the interval doubles.
type Series struct {
	Interval int64       // ns between points
	Times    []int64     // ns, end of each interval
	TierUsed [][]float64 // [tier][point]: used / capacity at the sample
	LinkUtil [][]float64 // [pipe][point]: share of the interval the pipe moved bytes
	Pipes    []string    // the LinkUtil rows: each link direction, then each shared tier ("ssd (shared)")
	Queued   []int
	Running  []int
	// Batched engine: mean prompt tokens and decoding sequences per step
	// over each interval (0 where no step ended, and for the simple engine).
	PrefillTokens []float64
	DecodeSeqs    []float64
	Preemptions   []int64 // cumulative
}

// MaxPoints bounds a Series.
const MaxPoints = 1024

type sampler struct {
	s        Series
	next     int64
	busy     []*int64 // the pipes' busy counters, in Pipes order
	lastBusy []int64
	// per point: steps behind PrefillTokens / DecodeSeqs, so that merging
	// two points keeps an exact mean per step
	steps                       []int64
	lastSteps, lastPre, lastDec int64
}

// SampleEvery turns on sampling at the given virtual-time interval (it
// grows as the run gets longer). Call before Run.
func (s *Sim) SampleEvery(interval int64) {
	if interval <= 0 {
		return
	}
	sp := &sampler{next: interval}
	sp.s.Interval = interval
	sp.s.TierUsed = make([][]float64, s.nt)
	for _, l := range s.links {
		sp.s.Pipes = append(sp.s.Pipes, l.name)
		sp.busy = append(sp.busy, &l.busy)
	}
	for _, d := range s.devs {
		if d != nil {
			sp.s.Pipes = append(sp.s.Pipes, d.name+" (shared)")
			sp.busy = append(sp.busy, &d.busy)
		}
	}
	sp.s.LinkUtil = make([][]float64, len(sp.busy))
	sp.lastBusy = make([]int64, len(sp.busy))
	s.sampler = sp
}

// Series returns the samples taken so far (nil without SampleEvery).
func (s *Sim) Series() *Series {
	if s.sampler == nil {
		return nil
	}
	return &s.sampler.s
}

// sample records every interval boundary passed before now.
func (s *Sim) sample(now int64) {
	sp := s.sampler
	for now >= sp.next {
		iv := sp.s.Interval
		sp.s.Times = append(sp.s.Times, sp.next)
		for t := range s.nt {
			sp.s.TierUsed[t] = append(sp.s.TierUsed[t], float64(s.core.Used(t))/float64(s.core.Capacity(t)))
		}
		for i, b := range sp.busy {
			u := float64(*b-sp.lastBusy[i]) / float64(iv)
			sp.lastBusy[i] = *b
			sp.s.LinkUtil[i] = append(sp.s.LinkUtil[i], min(u, 1))
		}
		sp.s.Queued = append(sp.s.Queued, s.core.Queued())
		sp.s.Running = append(sp.s.Running, s.core.Running())
		var n, pre, dec int64
		if e := s.eng; e != nil {
			n, pre, dec = e.steps-sp.lastSteps, e.prefillSum-sp.lastPre, e.decodeSum-sp.lastDec
			sp.lastSteps, sp.lastPre, sp.lastDec = e.steps, e.prefillSum, e.decodeSum
		}
		var mp, md float64
		if n > 0 {
			mp, md = float64(pre)/float64(n), float64(dec)/float64(n)
		}
		sp.steps = append(sp.steps, n)
		sp.s.PrefillTokens = append(sp.s.PrefillTokens, mp)
		sp.s.DecodeSeqs = append(sp.s.DecodeSeqs, md)
		sp.s.Preemptions = append(sp.s.Preemptions, s.core.Stats.Preemptions)
		sp.next += iv
		if len(sp.s.Times) >= MaxPoints {
			sp.halve()
		}
	}
}

// halve merges pairs of points: occupancy and counts keep the later
// sample, utilisation averages.
func (sp *sampler) halve() {
	s := &sp.s
	n := len(s.Times) / 2
	for i := range n {
		s.Times[i] = s.Times[2*i+1]
		for _, u := range s.TierUsed {
			u[i] = u[2*i+1]
		}
		for _, u := range s.LinkUtil {
			u[i] = (u[2*i] + u[2*i+1]) / 2
		}
		s.Queued[i] = s.Queued[2*i+1]
		s.Running[i] = s.Running[2*i+1]
		s.Preemptions[i] = s.Preemptions[2*i+1]
		a, b := float64(sp.steps[2*i]), float64(sp.steps[2*i+1])
		if a+b > 0 {
			s.PrefillTokens[i] = (a*s.PrefillTokens[2*i] + b*s.PrefillTokens[2*i+1]) / (a + b)
			s.DecodeSeqs[i] = (a*s.DecodeSeqs[2*i] + b*s.DecodeSeqs[2*i+1]) / (a + b)
		} else {
			s.PrefillTokens[i], s.DecodeSeqs[i] = 0, 0
		}
		sp.steps[i] = sp.steps[2*i] + sp.steps[2*i+1]
	}
	s.Times = s.Times[:n]
	for t := range s.TierUsed {
		s.TierUsed[t] = s.TierUsed[t][:n]
	}
	for t := range s.LinkUtil {
		s.LinkUtil[t] = s.LinkUtil[t][:n]
	}
	s.Queued, s.Running = s.Queued[:n], s.Running[:n]
	s.PrefillTokens, s.DecodeSeqs, s.Preemptions, sp.steps = s.PrefillTokens[:n], s.DecodeSeqs[:n], s.Preemptions[:n], sp.steps[:n]
	s.Interval *= 2
	sp.next = s.Times[n-1] + s.Interval
}
