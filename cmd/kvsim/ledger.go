package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"kvsim/results"
)

// printLedger prints the endurance and cost ledger below the run's table:
// writes a day into each tier below hbm, drive writes a day and life
// where a tier is rated, and the price per million tokens.
func printLedger(w io.Writer, s *results.Summary) {
	if len(s.Policies) == 0 || s.Policies[0].Ledger == nil {
		return
	}
	first := s.Policies[0].Ledger
	rated := map[string]bool{}
	hdr := "ledger\t"
	for i, t := range first.Tiers {
		if i > 0 {
			hdr += t.Tier + " GiB/day\t"
		}
	}
	for _, t := range first.Tiers {
		if t.RatedBytes > 0 {
			rated[t.Tier] = true
			hdr += t.Tier + " DWPD\t" + t.Tier + " life y\t"
		}
	}
	hdr += "$ run\t$/M prompt tok\t$/M output tok\t"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, hdr)
	for _, p := range s.Policies {
		l := p.Ledger
		row := p.Name + "\t"
		for i, t := range l.Tiers {
			if i > 0 {
				row += strconv.FormatFloat(t.BytesPerDay/(1<<30), 'f', 1, 64) + "\t"
			}
		}
		for _, t := range l.Tiers {
			if rated[t.Tier] {
				row += strconv.FormatFloat(t.DriveWritesPerDay, 'f', 2, 64) + "\t" + optCell(t.LifeYears, 'g', 3) + "\t"
			}
		}
		c := l.Cost
		row += strconv.FormatFloat(c.TotalUSD, 'g', 4, 64) + "\t" + optCell(c.USDPerMPromptTokens, 'g', 4) + "\t" +
			optCell(c.USDPerMOutputTokens, 'g', 4) + "\t"
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
}

// optCell is *x in a printed table, "-" where it is absent (no rating, no
// writes, no tokens).
func optCell(x *float64, f byte, prec int) string {
	if x == nil {
		return "-"
	}
	return strconv.FormatFloat(*x, f, prec, 64)
}
