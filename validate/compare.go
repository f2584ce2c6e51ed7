package validate

import "math"

// compare pairs each record with kvsim's prediction for it.
func compare(rs *Records, pred []predicted) *Result {
	r := &Result{Kind: Kind, Version: Version, Records: Source{Path: rs.Path, Format: rs.Format, Requests: len(rs.Recs), Failed: rs.Failed}}
	var ttft, tpot, e2e [2][]float64 // measured, predicted, in ms
	nan := Num(math.NaN())
	for i := range rs.Recs {
		rec, p := &rs.Recs[i], pred[i]
		q := Request{Line: rec.Line, ID: rec.ID, ArrivalMs: ms(rec.ArrivalNs), InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens,
			TTFTMs: [2]Num{Num(ms(rec.TTFTNs)), nan}, TPOTMs: [2]Num{nan, nan}, E2EMs: [2]Num{Num(ms(rec.E2ENs)), nan},
			Preemptions: p.preemptions, Rejected: p.rejected || !p.seen}
		mt, hasTPOT := rec.TPOTNs()
		if hasTPOT {
			q.TPOTMs[0] = Num(mt / 1e6)
		}
		if !q.Rejected {
			q.TTFTMs[1], q.E2EMs[1] = Num(ms(p.firstToken)), Num(ms(p.done))
			ttft[0], ttft[1] = append(ttft[0], ms(rec.TTFTNs)), append(ttft[1], ms(p.firstToken))
			e2e[0], e2e[1] = append(e2e[0], ms(rec.E2ENs)), append(e2e[1], ms(p.done))
			if hasTPOT {
				// The same definition on both sides: (last - first) / (n - 1).
				pt := float64(p.done-p.firstToken) / float64(rec.OutputTokens-1) / 1e6
				q.TPOTMs[1] = Num(pt)
				tpot[0], tpot[1] = append(tpot[0], mt/1e6), append(tpot[1], pt)
			}
		} else {
			r.Rejected++
		}
		r.PerRequest = append(r.PerRequest, q)
	}
	r.TTFT, r.TPOT, r.E2E = metric(ttft), metric(tpot), metric(e2e)
	return r
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func stat(v []float64) Stat {
	return Stat{Mean: Num(Mean(v)), P50: Num(Percentile(v, 50)), P90: Num(Percentile(v, 90)), P99: Num(Percentile(v, 99))}
}

// metric compares v[1] (predicted) against v[0] (measured), pairwise.
func metric(v [2][]float64) Metric {
	m := Metric{Requests: len(v[0]), Measured: stat(v[0]), Predicted: stat(v[1])}
	mm, pm := Mean(v[0]), Mean(v[1])
	m.MeanErrorPct = Num(math.NaN())
	if mm > 0 {
		m.MeanErrorPct = Num(100 * (pm - mm) / mm)
	}
	mape, _ := MAPE(v[1], v[0])
	m.MAPEPct, m.BiasPct, m.KS = Num(mape), Num(Bias(v[1], v[0])), Num(KS(v[1], v[0]))
	return m
}

// Compare compares predicted against measured values, pairwise (the same
// index is the same request): means, percentiles, MAPE, bias and KS, as
// kvsim validate reports them. kvsim replay --real uses it for its
// simulated-against-measured figures.
func Compare(measured, predicted []float64) Metric {
	return metric([2][]float64{measured, predicted})
}
