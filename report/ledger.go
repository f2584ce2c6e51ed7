package report

import (
	"math"

	"kvsim/results"
)

// writePurposes name the moves that write into a tier below hbm: a load
// writes there when it stages through it or promotes into it.
var writePurposes = []struct{ key, label string }{
	{"demote", "demotion (offload)"}, {"write_through", "write-through"},
	{"load", "promotion or staging"}, {"prefetch", "prefetch"},
}

// ledgerCharts are the endurance ledger's pair: each policy's writes a day
// into the tiers below hbm, stacked by tier and purpose; beside it the
// rated tiers' years of life, or without a rating their drive writes a
// day. None for a summary without a ledger (older kvsims) or a hierarchy
// of hbm alone.
func ledgerCharts(s *results.Summary) []chart {
	if len(s.Policies) == 0 || s.Policies[0].Ledger == nil || len(s.Policies[0].Ledger.Tiers) < 2 {
		return nil
	}
	tiers := s.Policies[0].Ledger.Tiers[1:] // the same tiers in every policy
	writes := chart{ID: "ledger_writes", Kind: kindBar, Stack: true, Title: "Writes per simulated day by purpose",
		Subtitle: "bytes written into each tier below hbm, scaled from the trace's span; in brackets: bytes written",
		XName:    "policy", YName: "written (GiB/day)", Categories: policyNames(s),
		Unit: " GiB/day", Decimals: 1, DetailUnit: " B"}
	for i, t := range tiers {
		for _, pu := range writePurposes {
			sr := series{Name: t.Tier + ": " + pu.label}
			wrote := false
			for _, p := range s.Policies {
				tl := p.Ledger.Tiers[i+1]
				b := tl.ByPurpose[pu.key]
				wrote = wrote || b > 0
				perDay := 0.0
				if tl.BytesWritten > 0 {
					perDay = tl.BytesPerDay * float64(b) / float64(tl.BytesWritten)
				}
				sr.Values = append(sr.Values, round(perDay/(1<<30)))
				sr.Detail = append(sr.Detail, float64(b))
			}
			if wrote {
				writes.Series = append(writes.Series, sr)
			}
		}
	}
	wear := chart{ID: "ledger_life", Kind: kindBar, Title: "Years of life at this write rate",
		Subtitle: "rated writes (dwpd or tbw) / (writes a day x write amplification); in brackets: drive writes per day",
		XName:    "policy", YName: "life (years)", Categories: policyNames(s),
		Unit: " years", Decimals: 2, DetailDecimals: 3, DetailUnit: " DWPD"}
	for i, t := range tiers {
		if t.RatedBytes <= 0 {
			continue
		}
		sr := series{Name: t.Tier}
		for _, p := range s.Policies {
			tl := p.Ledger.Tiers[i+1]
			v := math.NaN() // no writes: no wear to draw
			if tl.LifeYears != nil {
				v = round(*tl.LifeYears)
			}
			sr.Values = append(sr.Values, v)
			sr.Detail = append(sr.Detail, tl.DriveWritesPerDay)
		}
		wear.Series = append(wear.Series, sr)
	}
	if len(wear.Series) == 0 { // no rating: the drive writes a day instead
		wear = chart{ID: "ledger_dwpd", Kind: kindBar, Title: "Drive writes per day",
			Subtitle: "writes a day x write amplification / capacity; no tier is rated (dwpd, tbw) for a life figure",
			XName:    "policy", YName: "drive writes per day", Categories: policyNames(s),
			Unit: "", Decimals: 3}
		for i, t := range tiers {
			sr := series{Name: t.Tier}
			for _, p := range s.Policies {
				sr.Values = append(sr.Values, round(p.Ledger.Tiers[i+1].DriveWritesPerDay))
			}
			wear.Series = append(wear.Series, sr)
		}
	}
	return []chart{writes, wear}
}
