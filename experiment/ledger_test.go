package experiment

import (
	"math"
	"testing"

	"kvsim/core"
	"kvsim/scenario"
	"kvsim/sim"
)

const ledgerScenario = `
name = "ledger"
[model]
preset = "llama-3.1-8b" # 2 x 32 layers x 8 heads x 128 x 2 bytes = 128 KiB a token, 64 MiB a 512-token block
[gpu]
preset = "h100"
tp = 2
cost_per_hour = 3.0
[[tier]]
kind = "hbm"
capacity = "40GiB"
cost_per_gb = 0
[[tier]]
kind = "dram"
capacity = "100GB"
cost_per_gb = 2.0
[[tier]]
kind = "ssd"
capacity = "2TB"
cost_per_gb = 0.1
dwpd = 1
tbw = 1000
[workload]
trace = "t.jsonl"
[[policy]]
eviction = "lru"
`

// TestLedgerByHand works the ledger out by hand for a half-day run that
// wrote 1e12 bytes into the ssd (demotions) and 5e11 into dram (3e11
// demotions, 2e11 staged loads from the ssd).
func TestLedgerByHand(t *testing.T) {
	sc, err := scenario.Parse([]byte(ledgerScenario), "ledger.toml")
	if err != nil {
		t.Fatal(err)
	}
	var dramIn, ssdIn, hbmIn [4]int64
	ssdIn[core.Demote] = 1e12
	dramIn[core.Demote], dramIn[core.Load] = 3e11, 2e11
	hbmIn[core.Load] = 4e11
	res := &sim.Result{End: 43200e9, PromptTokens: 1e6, OutputTokens: 2e5, Links: []sim.LinkStats{
		{Name: "hbm->dram", From: 0, To: 1, Bytes: 3e11, ByKind: [4]int64{core.Demote: 3e11}},
		{Name: "dram->hbm", From: 1, To: 0, Bytes: 4e11, ByKind: hbmIn},
		{Name: "dram->ssd", From: 1, To: 2, Bytes: 1e12, ByKind: ssdIn},
		{Name: "ssd->dram", From: 2, To: 1, Bytes: 2e11, ByKind: [4]int64{core.Load: 2e11}},
	}}
	l := ledger(sc, res)
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s = %.12g, want %.12g", what, got, want)
		}
	}
	if l.SpanS != 43200 || l.Copies != 1 || len(l.Tiers) != 3 {
		t.Fatalf("span %g, copies %d, %d tiers", l.SpanS, l.Copies, len(l.Tiers))
	}
	dram, ssd := l.Tiers[1], l.Tiers[2]
	if dram.BytesWritten != 5e11 || dram.ByPurpose["demote"] != 3e11 || dram.ByPurpose["load"] != 2e11 || ssd.BytesWritten != 1e12 {
		t.Errorf("bytes written: dram %+v, ssd %+v", dram, ssd)
	}
	if dram.WriteAmplification != 1 || dram.RatedBytes != 0 || dram.LifeYears != nil || dram.AmortYears != 5 {
		t.Errorf("dram, a store without amplification and unrated: %+v", dram)
	}
	// The ssd by hand:
	// bytes a day      = 1e12 x 86400 / 43200                 = 2e12
	// WA (bucket store): 64 MiB blocks, padded to 4 KiB: 67108864 bytes;
	//   a bucket holds min(500, 256 MiB / 64 MiB) = 4 blocks and a
	//   metadata file of 56 + 4 x 40 + 8 = 224 bytes, padded to 4096:
	//   WA = (4 x 67108864 + 4096) / (4 x 67108864)         = 1.0000152587890625
	// DWPD             = 2e12 x WA / 2e12                     = 1.0000152587890625
	// rated            = min(dwpd 1 x 2e12 x 365 x 5 = 3.65e15, tbw 1000 x 1e12 = 1e15) = 1e15
	// life years       = 1e15 / (2e12 x WA x 365)             = 1.369842111566801
	near("ssd bytes/day", ssd.BytesPerDay, 2e12)
	near("ssd WA", ssd.WriteAmplification, 1.0000152587890625)
	near("ssd DWPD", ssd.DriveWritesPerDay, 1.0000152587890625)
	near("ssd rated", ssd.RatedBytes, 1e15)
	if ssd.LifeYears == nil {
		t.Fatal("ssd: no life")
	}
	near("ssd life", *ssd.LifeYears, 1.369842111566801)
	near("ssd amortised over", ssd.AmortYears, 1.369842111566801) // worn out before its 5 years
	// $ by hand, over the 43200 s span:
	// dram: $200 over 5 years       = 200 x 43200 / (5 x 365 x 86400)        = 0.0547945205479452
	// ssd:  $200 over its life      = 200 x 43200 / (1.369842... x 31536000) = 0.20000305175781247
	//       (= $200 x the share of its rated writes used: 1e12 x WA / 1e15)
	// GPUs: 2 x $3/h x 12 h         = 72
	// total                         = 72.25479757230576
	// per million prompt tokens     = 72.25479757230576 x 1e6 / 1e6   = 72.25479757230576
	// per million output tokens     = 72.25479757230576 x 1e6 / 2e5   = 361.27398786152884
	near("hierarchy $", l.Cost.HierarchyUSD, 0.0547945205479452+0.20000305175781247)
	near("GPU $", l.Cost.GPUUSD, 72)
	near("total $", l.Cost.TotalUSD, 72.25479757230576)
	if l.Cost.USDPerMPromptTokens == nil || l.Cost.USDPerMOutputTokens == nil {
		t.Fatal("no price per token")
	}
	near("$/M prompt", *l.Cost.USDPerMPromptTokens, 72.25479757230576)
	near("$/M output", *l.Cost.USDPerMOutputTokens, 361.27398786152884)
}

// TestLedgerEmpty: a run of no time and no tokens has no rates, no life
// and no price, rather than NaN or infinity (which JSON cannot hold).
func TestLedgerEmpty(t *testing.T) {
	sc, err := scenario.Parse([]byte(ledgerScenario), "ledger.toml")
	if err != nil {
		t.Fatal(err)
	}
	l := ledger(sc, &sim.Result{})
	for _, tl := range l.Tiers {
		if tl.BytesPerDay != 0 || tl.DriveWritesPerDay != 0 || tl.LifeYears != nil {
			t.Errorf("%+v", tl)
		}
	}
	if l.Cost.TotalUSD != 0 || l.Cost.USDPerMPromptTokens != nil || l.Cost.USDPerMOutputTokens != nil {
		t.Errorf("%+v", l.Cost)
	}
}

// TestWriteAmp: the bucket store's padding shows on blocks that are not
// a multiple of 4 KiB, and a device pads without metadata.
func TestWriteAmp(t *testing.T) {
	for _, c := range []struct {
		kind, device string
		block        int64
		want         float64
	}{
		{"dram", "", 1000, 1},
		{"ssd", "", 4096, float64(500*4096+alignUp(56+500*40+8, 4096)) / (500 * 4096)}, // 500 blocks a bucket, 20064-byte metadata -> 20480
		{"ssd", "", 6000, float64(500*8192+20480) / (500 * 6000)},
		{"nvmeof", "/dev/nvme1n1", 6000, 8192.0 / 6000},
	} {
		got := writeAmp(scenario.Tier{Kind: c.kind, Device: c.device}, c.block)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s %q %d: %g, want %g", c.kind, c.device, c.block, got, c.want)
		}
	}
}
