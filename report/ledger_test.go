package report

import (
	"testing"

	"kvsim/results"
)

// withLedger gives the small fixture's policies hand-written ledgers: dram
// rated, lru writing 2 GiB/day (1.5 demoted, 0.5 staged), fifo nothing.
func withLedger(t *testing.T, rated bool) *results.Summary {
	s := load(t, "small")
	life := 10.0
	for i := range s.Policies {
		d := results.TierLedger{Tier: "dram", ByPurpose: map[string]int64{"demote": 0, "load": 0, "write_through": 0, "prefetch": 0}}
		if i == 0 {
			d.BytesWritten, d.BytesPerDay, d.DriveWritesPerDay = 4<<30, 2<<30, 0.5
			d.ByPurpose["demote"], d.ByPurpose["load"] = 3<<30, 1<<30
			if rated {
				d.LifeYears = &life
			}
		}
		if rated {
			d.RatedBytes = 1e15
		}
		s.Policies[i].Ledger = &results.Ledger{Tiers: []results.TierLedger{{Tier: "hbm"}, d}}
	}
	return s
}

// TestGoldenLedger pins the writes-by-purpose and life charts; a policy
// that wrote nothing has no life bar.
func TestGoldenLedger(t *testing.T) {
	goldenCharts(t, "ledger", ledgerCharts(withLedger(t, true)))
	cs := ledgerCharts(withLedger(t, false))
	if len(cs) != 2 || cs[1].ID != "ledger_dwpd" {
		t.Errorf("unrated: %+v", cs)
	}
	if cs := ledgerCharts(load(t, "small")); cs != nil {
		t.Errorf("a summary without a ledger: %+v", cs)
	}
}
