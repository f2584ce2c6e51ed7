package experiment

import (
	"math"

	"kvsim/core"
	"kvsim/results"
	"kvsim/scenario"
	"kvsim/sim"
	"kvsim/tierkind"
)

// The SSD bucket store's layout, repeated from hw/bucket so that the
// simulator links no store: blocks start on bucketMinAlign and are padded
// to it; a bucket holds up to DefaultBucketBytes or MaxKeys' default of
// blocks; sealing writes a metadata file of bucketMetaHead + one
// bucketMetaEnt per block + bucketMetaTail bytes, padded to 4 KiB.
const (
	bucketAlign    = 4096
	bucketBytes    = 256 << 20
	bucketMaxKeys  = 500
	bucketMetaHead = 56
	bucketMetaEnt  = 40
	bucketMetaTail = 8
)

const (
	daySeconds  = 86400.0
	yearDays    = 365.0 // data sheets' TBW = DWPD x capacity x 365 x warranty years
	yearSeconds = yearDays * daySeconds
)

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// writeAmp is the device bytes per host byte a tier's store writes for
// blocks of block bytes: a disk kind's bucket store pads each block to
// 4 KiB and adds a bucket's metadata; a disk kind on a device (fixed
// slots by O_DIRECT) pads to 4 KiB; other stores add nothing.
func writeAmp(t scenario.Tier, block int64) float64 {
	k, _ := tierkind.Lookup(t.Kind)
	if !k.OnDisk || block <= 0 {
		return 1
	}
	padded := alignUp(block, bucketAlign)
	if t.Device != "" {
		return float64(padded) / float64(block)
	}
	n := min(int64(bucketMaxKeys), max(1, bucketBytes/padded))
	meta := alignUp(bucketMetaHead+n*bucketMetaEnt+bucketMetaTail, bucketAlign)
	return float64(n*padded+meta) / float64(n*block)
}

// ratedBytes is one copy of t's rated writes, 0 when unrated.
func ratedBytes(t scenario.Tier) float64 {
	var r float64
	if t.DWPD > 0 {
		r = t.DWPD * float64(t.Capacity) * yearDays * t.Years()
	}
	if t.TBW > 0 {
		if tb := t.TBW * 1e12; r == 0 || tb < r {
			r = tb
		}
	}
	return r
}

// copies is how many of each tier a run has: a cluster's instances.
func copies(sc *scenario.Scenario) int {
	return max(sc.Cluster.Instances, 1)
}

// ledger is one policy's endurance and cost ledger (results.Ledger).
func ledger(sc *scenario.Scenario, res *sim.Result) *results.Ledger {
	n := copies(sc)
	span := float64(res.End) / 1e9
	l := &results.Ledger{SpanS: span, Copies: n}
	written := make([][4]int64, len(sc.Tiers))
	for _, ls := range res.Links {
		for k, b := range ls.ByKind {
			written[ls.To][k] += b
		}
	}
	for i, t := range sc.Tiers {
		w := written[i]
		tl := results.TierLedger{Tier: t.Name, BytesWritten: w[0] + w[1] + w[2] + w[3],
			ByPurpose: map[string]int64{"load": w[core.Load], "demote": w[core.Demote],
				"write_through": w[core.WriteThrough], "prefetch": w[core.PrefetchMove]},
			WriteAmplification: writeAmp(t, sc.Model.BytesPerBlock()), RatedBytes: ratedBytes(t), AmortYears: t.Years()}
		if span > 0 {
			tl.BytesPerDay = float64(tl.BytesWritten) * daySeconds / span
		}
		perCopy := tl.BytesPerDay / float64(n) * tl.WriteAmplification // device bytes a day
		if t.Capacity > 0 {
			tl.DriveWritesPerDay = perCopy / float64(t.Capacity)
		}
		if tl.RatedBytes > 0 && perCopy > 0 {
			life := tl.RatedBytes / (perCopy * yearDays)
			tl.LifeYears = &life
			tl.AmortYears = min(tl.AmortYears, life)
		}
		l.Tiers = append(l.Tiers, tl)
		cost := float64(t.Capacity) / 1e9 * t.CostPerGB // as hierarchy_cost_usd
		l.Cost.HierarchyUSD += cost * float64(n) * span / (tl.AmortYears * yearSeconds)
	}
	gpus := sc.GPU.GPUs() * n
	l.Cost.GPUUSD = float64(gpus) * sc.GPU.CostPerHour * span / 3600
	l.Cost.TotalUSD = l.Cost.HierarchyUSD + l.Cost.GPUUSD
	l.Cost.PromptTokens, l.Cost.OutputTokens = res.PromptTokens, res.OutputTokens
	perM := func(tokens int64) *float64 {
		if tokens <= 0 {
			return nil
		}
		v := l.Cost.TotalUSD * 1e6 / float64(tokens)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	l.Cost.USDPerMPromptTokens, l.Cost.USDPerMOutputTokens = perM(res.PromptTokens), perM(res.OutputTokens)
	return l
}
