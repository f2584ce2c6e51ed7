package results

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Each file format kvsim writes reads back as written: one writer, one
// reader, nothing lost between them.

func TestSummaryRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "summary.json")
	q := &Quantiles{Mean: 1.5, P50: 1, P90: 2, P99: 3, Max: 4}
	att := 0.75
	in := &Summary{Scenario: "s", RunID: "abc", Description: "d", Overrides: []string{"seed=2"}, Seed: 2,
		Model: Model{Layers: 2, KVHeads: 1, HeadDim: 8, DType: "bf16", BlockTokens: 16, BytesPerToken: 64, BytesPerBlock: 1024},
		Tiers: []Tier{{Name: "hbm", Kind: "hbm", CapacityBytes: 1 << 30}}, Trace: Trace{Path: "t.jsonl", Requests: 3},
		Policies: []Policy{{Name: "lru", Eviction: "lru", Requests: 3, Hits: map[string]int64{"hbm": 1}, TTFTms: q,
			TPOTms: &Quantiles{Mean: 0.25, P50: 0.125, P90: 0.5, P99: 1, Max: 2}, E2Ems: q, LoadWaitMs: &Quantiles{Max: 7},
			OutputTokensPerS: 123.5, Preemptions: 4, SLOAttainment: &att}},
		Series: []TimeSeries{{Policy: "lru", IntervalS: 1, TimesS: []float64{1, 2}, TierUsed: map[string][]float64{"hbm": {0.5, 1}},
			LinkUtil: map[string][]float64{}, Queued: []int{0, 1}, Running: []int{2, 3},
			PrefillTokens: []float64{512, 0.5}, DecodeSeqs: []float64{3.25, 4}, Preemptions: []int64{0, 2}}},
		Sweep: &SweepPoint{Key: "seed", Value: "2"}, SLO: &SLO{TTFTms: 200, TPOTms: 50}}
	if err := WriteSummary(p, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadSummary(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("read back %+v, wrote %+v", out, in)
	}
}

func TestRequestsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	tiers := []string{"hbm", "dram", "ssd"}
	rng := rand.New(rand.NewPCG(1, 2))
	ns := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Int64N(1000) // below a microsecond: many decimals in ms
		case 2:
			return rng.Int64N(1 << 50) // weeks, in ns
		}
		return rng.Int64N(1e12)
	}
	var want []Request
	var parts []string
	for _, name := range []string{"lru", "s3-fifo"} {
		var b []byte
		for i := range 200 {
			r := Request{Policy: name, Seq: int64(i), ArrivalNs: ns(), QueueNs: ns(), DepWaitNs: ns(), LoadNs: ns(),
				ComputeNs: ns(), TTFTNs: ns(), DoneNs: ns(), InputTokens: rng.IntN(1e6), OutputTokens: rng.IntN(1e4),
				Blocks: rng.IntN(1e4), HitBlocks: []int64{rng.Int64N(9), rng.Int64N(9), rng.Int64N(9)},
				BlockHits: rng.IntN(100), RecomputedTokens: rng.IntN(100), Rejected: rng.IntN(5) == 0,
				TPOTNs: ns(), E2ENs: ns(), LoadWaitNs: ns(), Preemptions: rng.IntN(4), Instance: rng.IntN(5) - 1, RunID: "0123abcd"}
			if rng.IntN(4) == 0 {
				r.TPOTNs = NoTPOT // an empty cell
			}
			want = append(want, r)
			b = AppendRequest(b, &r)
		}
		part := filepath.Join(dir, name+".part")
		if err := os.WriteFile(part, b, 0o644); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part)
	}
	path := filepath.Join(dir, "requests.csv")
	if err := WriteRequests(path, tiers, parts); err != nil {
		t.Fatal(err)
	}
	rr, err := OpenRequests(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if !reflect.DeepEqual(rr.Tiers, tiers) || !rr.HasRunID || !rr.HasTPOT {
		t.Fatalf("header: tiers %v run_id %v tpot %v", rr.Tiers, rr.HasRunID, rr.HasTPOT)
	}
	var got Request
	for i := 0; ; i++ {
		err := rr.Next(&got)
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("read %d rows, wrote %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("row %d: read %+v, wrote %+v", i, got, want[i])
		}
	}
}

// A requests.csv of an older kvsim (no rejected or run_id column) reads,
// and a malformed number names its line and column.
func TestRequestsReaderOldAndBad(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.csv")
	os.WriteFile(old, []byte("policy,seq,ttft_ms,hit_blocks_hbm\nlru,0,1.5,3\n"), 0o644)
	rr, err := OpenRequests(old)
	if err != nil {
		t.Fatal(err)
	}
	var q Request
	if err := rr.Next(&q); err != nil || rr.HasRunID || q.TTFTNs != 1_500_000 || q.HitBlocks[0] != 3 || q.Rejected {
		t.Errorf("old file: %+v, %v", q, err)
	}
	// No tpot_ms, e2e_ms, load_wait_ms, preemptions or instance column (kvsims
	// before them): no TPOT, zeros, and the reader says the column lacks.
	if rr.HasTPOT || q.TPOTNs != NoTPOT || q.E2ENs != 0 || q.LoadWaitNs != 0 || q.Preemptions != 0 || q.Instance != 0 {
		t.Errorf("old file: tpot column %v, row %+v", rr.HasTPOT, q)
	}
	rr.Close()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("policy,ttft_ms\nlru,1\nlru,x\n"), 0o644)
	rr, err = OpenRequests(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	rr.Next(&q)
	if err := rr.Next(&q); err == nil || err.Error() != bad+`:3: bad ttft_ms "x"` {
		t.Errorf("bad value: %v", err)
	}
	none := filepath.Join(dir, "none.csv")
	os.WriteFile(none, []byte("a,b\n1,2\n"), 0o644)
	if _, err := OpenRequests(none); err == nil || !strings.Contains(err.Error(), "not a kvsim requests.csv") {
		t.Errorf("no policy column: %v", err)
	}
	if _, err := OpenRequests(filepath.Join(dir, "missing.csv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestRequestsColumnsKeepPlace: columns added since the first layout
// come after rejected and before run_id, so readers that pick the older
// columns by position still find them; an empty tpot_ms reads as NoTPOT.
func TestRequestsColumnsKeepPlace(t *testing.T) {
	const old = "policy,seq,arrival_ms,queue_ms,dependency_wait_ms,load_ms,compute_ms,ttft_ms,done_ms,input_tokens,output_tokens,blocks,hit_blocks_hbm,block_hits,recomputed_tokens,rejected,"
	h := RequestsHeader([]string{"hbm"})
	if !strings.HasPrefix(h, old) || !strings.HasSuffix(h, ",run_id\n") {
		t.Fatalf("header %q", h)
	}
	r := Request{Policy: "lru", TTFTNs: 5e6, DoneNs: 9e6, OutputTokens: 1, HitBlocks: []int64{0}, TPOTNs: NoTPOT,
		E2ENs: 9e6, Preemptions: 2, Instance: 3, RunID: "x"}
	line := string(AppendRequest(nil, &r))
	if want := "lru,0,0,0,0,0,0,5,9,0,1,0,0,0,0,false,,9,0,2,3,x\n"; line != want {
		t.Errorf("row %q, want %q", line, want)
	}
}

func TestTPOT(t *testing.T) {
	for _, c := range []struct {
		first, done int64
		out         int
		want        int64
	}{
		{100, 100, 0, NoTPOT}, {100, 100, 1, NoTPOT},
		{100, 130, 2, 30}, // one decode step after the first token
		{100, 131, 4, 10}, // 31 ns over 3 tokens: whole ns, truncated
	} {
		if got := TPOT(c.first, c.done, c.out); got != c.want {
			t.Errorf("TPOT(%d, %d, %d) = %d, want %d", c.first, c.done, c.out, got, c.want)
		}
	}
}

func TestReplayRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "replay.json")
	in := &Replay{Scenario: "s", Trace: "t.jsonl", Policy: "lru", Requests: 9, BlockBytes: 65536, Scale: 0.25,
		Backends: map[string]string{"hbm": "host memory"}, Notes: []string{"n"},
		Stores: map[string]ReplayStore{"ssd": {Dir: "d/tier-ssd", State: "reopened", Buckets: 2, Blocks: 7,
			Discarded: []string{"x"}, WarmBlocks: 5, DroppedBlocks: 2}},
		Links:  map[string]ReplayLink{"hbm->ssd": {Count: 3, Failed: 1, Bytes: 100, P50us: 1.5, P99us: 9, GBps: 2, PredictedP50us: 1, RelError: 0.5}},
		Verify: &ReplayVerify{Checked: 4, Corrupt: 1}, Hits: map[string]int64{"hbm": 1}, Misses: 2,
		Evictions: map[string]int64{"hbm": 3}, Lost: map[string]int64{"ssd": 1}, StoreEvict: map[string]int64{"ssd": 0},
		Errors: []string{"e"}, Sequential: true, WallSeconds: 1.25}
	b, err := WriteReplay(path, in)
	if err != nil {
		t.Fatal(err)
	}
	if disk, _ := os.ReadFile(path); string(disk) != string(b) {
		t.Error("WriteReplay returned other bytes than it wrote")
	}
	out, err := ReadReplay(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("read back %+v, wrote %+v", out, in)
	}
	if err := CheckReplayPath(path); err != nil {
		t.Errorf("a replay.json kvsim wrote may be replaced: %v", err)
	}
	other := filepath.Join(t.TempDir(), "replay.json")
	os.WriteFile(other, []byte(`{"scenario": "mine"}`), 0o644)
	if err := CheckReplayPath(other); err == nil {
		t.Error("a file kvsim did not write would be replaced")
	}
}

func TestProfileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.toml")
	in := &Profile{BlockBytes: 65536, Machine: "m", Date: "2026-01-02", Notes: `backends: map[ssd:io_uring "q"]`,
		Links: []ProfileLink{{From: "hbm", To: "dram", Bandwidth: "25000MB/s", ReverseBandwidth: "24000MB/s", Latency: "10us", ReverseLatency: "11us"},
			{From: "dram", To: "ssd", Bandwidth: "7000MB/s", ReverseBandwidth: "6000MB/s", Latency: "80us", ReverseLatency: "20us"}},
		Measurements: map[string]float64{"populate_gbps": 3.5, "count": 4}}
	if err := WriteProfile(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("read back %+v, wrote %+v", out, in)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("machine = \"m\"\nspeed = 3\n"), 0o644)
	if _, err := ReadProfile(bad); err == nil || err.Error() != `unknown key "speed"` {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := ReadProfile("/dev/null"); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("a device: %v", err)
	}
}

// AppendRequest runs once per request per policy: it allocates nothing
// once its buffer has grown, with or without a TPOT.
func TestAppendRequestAllocs(t *testing.T) {
	r := Request{Policy: "lru", Seq: 7, TTFTNs: 1_234_567, DoneNs: 9e9, OutputTokens: 9, HitBlocks: []int64{1, 2},
		TPOTNs: 12_345_678, E2ENs: 9e9, LoadWaitNs: 5e6, Preemptions: 1, RunID: "0123456789abcdef"}
	b := AppendRequest(nil, &r)
	if n := testing.AllocsPerRun(100, func() {
		r.TPOTNs = NoTPOT - r.TPOTNs - 1 // alternate: a TPOT, then none
		b = AppendRequest(b[:0], &r)
	}); n != 0 {
		t.Errorf("%v allocations per row", n)
	}
}
