package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kvsim/hw"
	"kvsim/hw/bucket"
	"kvsim/results"
)

var replaySSD = []string{"replay", "--real", "--mirror", "--scenario", "../../scenarios/hbm_dram_ssd.toml", "--limit", "600", "--block-bytes", "16384"}

const synthetic = "../../traces/synthetic.jsonl"

func replayIn(t *testing.T, dir string, extra ...string) (*results.Replay, string) {
	t.Helper()
	base := replaySSD
	if slices.Contains(extra, "--sequential") { // the other mode than --mirror
		base = slices.DeleteFunc(slices.Clone(base), func(a string) bool { return a == "--mirror" })
	}
	args := append(append(append([]string{}, base...), "--dir", dir), extra...)
	stdout, stderr, code := runKvsim(append(args, synthetic)...)
	if code != 0 {
		t.Fatalf("%v: status %d: %s", extra, code, stderr)
	}
	return readReplay(t, filepath.Join(dir, "replay.json")), stdout
}

// TestReplayReopen: a second replay on the same --dir reopens the SSD
// tier's store: the blocks the first left are recovered, placed in the
// tier before the first request, and served as SSD hits, each verifying;
// --fresh empties the store and gives the first run's decisions again.
func TestReplayReopen(t *testing.T) {
	for _, mode := range []string{"sim", "sequential"} {
		t.Run(mode, func(t *testing.T) {
			var extra []string
			if mode == "sequential" {
				extra = []string{"--sequential"}
			}
			dir := replayDir(t)
			first, _ := replayIn(t, dir, extra...)
			if st := first.Stores["ssd"]; st.State != "new" || first.Lost["ssd"] != 0 {
				t.Fatalf("first run: store %+v, lost %v", st, first.Lost)
			}
			second, out := replayIn(t, dir, append(extra, "--verify")...)
			st := second.Stores["ssd"]
			if st.State != "reopened" || st.Blocks == 0 || st.WarmBlocks != st.Blocks || st.DroppedBlocks != 0 {
				t.Errorf("second run: store %+v", st)
			}
			if !strings.Contains(out, "store ssd: reopened") || !strings.Contains(out, "blocks in") {
				t.Errorf("the table does not say what was recovered:\n%s", out)
			}
			if second.Hits["ssd"] <= first.Hits["ssd"] || second.Misses >= first.Misses {
				t.Errorf("warm SSD: hits %d -> %d, misses %d -> %d", first.Hits["ssd"], second.Hits["ssd"], first.Misses, second.Misses)
			}
			if second.Verify == nil || second.Verify.Checked == 0 || second.Verify.Corrupt != 0 || second.Lost["ssd"] != 0 {
				t.Errorf("verify %+v, lost %v", second.Verify, second.Lost)
			}
			third, out := replayIn(t, dir, append(extra, "--fresh")...)
			if st := third.Stores["ssd"]; st.State != "emptied" || st.Blocks == 0 || !strings.Contains(out, "emptied") {
				t.Errorf("--fresh: store %+v\n%s", st, out)
			}
			if third.Misses != first.Misses {
				t.Errorf("--fresh: misses %d, first run %d", third.Misses, first.Misses)
			}
			for tier := range first.Hits {
				if third.Hits[tier] != first.Hits[tier] || third.Evictions[tier] != first.Evictions[tier] {
					t.Errorf("--fresh, tier %s: hits %d evictions %d; first run %d, %d", tier,
						third.Hits[tier], third.Evictions[tier], first.Hits[tier], first.Evictions[tier])
				}
			}
		})
	}
}

// TestReplayBlockBytesChanged: a store written with other block bytes is
// refused (exit 2, naming the store and what differs) and left as it was.
func TestReplayBlockBytesChanged(t *testing.T) {
	dir := replayDir(t)
	replayIn(t, dir)
	tier := filepath.Join(dir, "tier-ssd")
	before, _ := os.ReadDir(tier)
	args := []string{"replay", "--real", "--mirror", "--scenario", "../../scenarios/hbm_dram_ssd.toml", "--limit", "600", "--block-bytes", "8192", "--dir", dir, synthetic}
	_, stderr, code := runKvsim(args...)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tier) || !strings.Contains(stderr, "--block-bytes 16384 (this replay: 8192)") {
		t.Errorf("status %d: %s", code, stderr)
	}
	if after, _ := os.ReadDir(tier); len(after) != len(before) {
		t.Errorf("the refused replay changed the store: %d files -> %d", len(before), len(after))
	}
	_, stderr, code = runKvsim(append(args[:len(args)-1], "--fresh", synthetic)...)
	if code != 0 {
		t.Errorf("--fresh: status %d: %s", code, stderr)
	}
}

// TestReplayDirNotOurs: replay never deletes or reuses what it did not
// make: a --dir with user files, a tier folder that exists without kvsim's
// marker, a replay.json it did not write, a tier name that would leave
// --dir. Each is exit 2 naming the path, and every file stays as it was.
func TestReplayDirNotOurs(t *testing.T) {
	dir := replayDir(t)
	outside := replayDir(t)
	files := map[string]string{
		filepath.Join(dir, "notes.txt"):             "user file",
		filepath.Join(dir, "tier-ssd", "data.bin"):  "user data",
		filepath.Join(dir, "tier-ssd", "x.meta"):    "not a bucket",
		filepath.Join(outside, "keep.txt"):          "outside",
		filepath.Join(outside, "tier-ssd", "k.bin"): "outside too",
	}
	for p, b := range files {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string) {
		t.Helper()
		for p, b := range files {
			if got, err := os.ReadFile(p); err != nil || string(got) != b {
				t.Errorf("%s: %s: %q, %v", what, p, got, err)
			}
		}
	}
	for _, fresh := range []string{"--verify", "--fresh"} {
		_, stderr, code := runKvsim(append(append([]string{}, replaySSD...), "--dir", dir, fresh, synthetic)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, filepath.Join(dir, "tier-ssd")) || !strings.Contains(stderr, "not made by kvsim") {
			t.Errorf("%s: status %d: %s", fresh, code, stderr)
		}
		check(fresh)
	}
	// A tier named to reach outside --dir.
	rel, _ := filepath.Rel(dir, outside)
	for _, name := range []string{"x/..", "../" + filepath.Base(outside), rel + "/tier-ssd"} {
		_, stderr, code := runKvsim(append(append([]string{}, replaySSD...), "--dir", dir, "--fresh", "--set", "tier.ssd.name="+name, "--set", "link.2.to="+name, synthetic)...)
		if code != 2 || !strings.Contains(stderr, "name:") {
			t.Errorf("tier %q: status %d: %s", name, code, stderr)
		}
		check("tier " + name)
	}
	// A replay.json kvsim did not write is not replaced.
	d2 := replayDir(t)
	mine := filepath.Join(d2, "replay.json")
	os.WriteFile(mine, []byte(`{"mine": true}`), 0o644)
	_, stderr, code := runKvsim(append(append([]string{}, replaySSD...), "--dir", d2, synthetic)...)
	if b, _ := os.ReadFile(mine); code != 2 || !strings.Contains(stderr, mine) || string(b) != `{"mine": true}` {
		t.Errorf("replay.json not ours: status %d: %s; now %s", code, stderr, b)
	}
	// Nor is a replay.json that is a named pipe (reading it to check it
	// blocked for ever) or a link (the rename replaced it).
	for _, kind := range []string{"fifo", "link"} {
		d := replayDir(t)
		p := filepath.Join(d, "replay.json")
		if kind == "fifo" {
			mkfifo(t, p)
		} else if err := os.Symlink(mine, p); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			_, stderr, code = runKvsim(append(append([]string{}, replaySSD...), "--dir", d, synthetic)...)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("replay.json a %s: replay hung", kind)
		}
		if st, err := os.Lstat(p); code != 2 || !strings.Contains(stderr, p+" exists and is not a regular file") || err != nil || st.Mode().IsRegular() {
			t.Errorf("replay.json a %s: status %d: %s", kind, code, stderr)
		}
	}
}

// TestReplayStoreLocked: a replay on a store another process holds fails
// at once (exit 2, saying so), --fresh included, and the live store keeps
// every block.
func TestReplayStoreLocked(t *testing.T) {
	dir := replayDir(t)
	replayIn(t, dir) // a store with blocks and the replay's identity
	// Hold the store as a live replay would: open it with its own identity.
	b, _ := os.ReadFile(filepath.Join(dir, "tier-ssd", hw.StoreMarker))
	var m struct {
		Identity []hw.StoreField `json:"identity"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	live, err := hw.OpenStores([]hw.TierSpec{{Name: "ssd", Kind: "ssd", Capacity: 1 << 40}}, hw.TierOptions{Dir: dir, SlotBytes: 16384, Engine: "pread", Identity: m.Identity})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	held := live.Opened[0].Blocks
	if held == 0 {
		t.Fatal("nothing in the store")
	}
	for _, extra := range []string{"--fresh", "--verify"} {
		stdout, stderr, code := runKvsim(append(append([]string{}, replaySSD...), "--dir", dir, extra, synthetic)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "in use by another process") || !strings.Contains(stderr, filepath.Join(dir, "tier-ssd")) {
			t.Errorf("%s: status %d: %s", extra, code, stderr)
		}
	}
	n := 0
	for k := range int32(100000) {
		if live.List[0].Has(k) {
			n++
		}
	}
	if n != held {
		t.Errorf("the live store held %d blocks, now %d", held, n)
	}
}

// TestReplayLoss: on a disk that fills up (ENOSPC injected under the
// store) the copies lost are counted per tier and shown with the first
// error, the moves that lost them stay out of the link figures (what the
// links report as written to the SSD fits in what the disk took), and the
// run exits 3, or 0 with --allow-loss.
func TestReplayLoss(t *testing.T) {
	const full = 12 << 20 // the first bucket (500 blocks of 16 KiB) fits, the second does not
	replayFaults = &bucket.FaultPlan{FailAfter: full, Sticky: true}
	defer func() { replayFaults = nil }()
	for _, allow := range []bool{false, true} {
		dir := replayDir(t)
		args := append(append([]string{}, replaySSD...), "--dir", dir)
		if allow {
			args = append(args, "--allow-loss")
		}
		stdout, stderr, code := runKvsim(append(args, synthetic)...)
		want := 3
		if allow {
			want = 0
		}
		if code != want {
			t.Fatalf("allow %v: status %d, want %d: %s", allow, code, want, stderr)
		}
		if !allow && (strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "copies lost") || !strings.Contains(stderr, "--allow-loss")) {
			t.Errorf("stderr: %q", stderr)
		}
		r := readReplay(t, filepath.Join(dir, "replay.json"))
		ds := r.Links["dram->ssd"]
		if r.Lost["ssd"] == 0 || ds.Failed == 0 || ds.Count == 0 || len(r.Errors) == 0 {
			t.Fatalf("lost %v, dram->ssd %+v, errors %v", r.Lost, ds, r.Errors)
		}
		if ds.Bytes > full {
			t.Errorf("dram->ssd reports %d bytes moved; the disk took at most %d", ds.Bytes, full)
		}
		if !strings.Contains(stdout, "LOST copies") || !strings.Contains(stdout, "ssd "+itoa(r.Lost["ssd"])) ||
			!strings.Contains(stdout, "first error: ") || !strings.Contains(stdout, "no space left on device") {
			t.Errorf("the table does not show the loss:\n%s", stdout)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestReplayTable: the header names scenario and policy once each; without
// --verify nothing is said about verifying; the default --dir is ignored
// by git.
func TestReplayTable(t *testing.T) {
	dir := replayDir(t)
	stdout, stderr, code := runKvsim("replay", "--real", "--mirror", "--dir", dir, "--limit", "40", "--block-bytes", "8192", synthetic)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "replay of scenario default, policy lru: 40 requests") || strings.Contains(stdout, "verify") {
		t.Errorf("table:\n%s", stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "replay.json")); strings.Contains(string(b), `"verify"`) {
		t.Errorf("replay.json has verify without --verify:\n%s", b)
	}
	stdout, _, _ = runKvsim("replay", "--real", "--mirror", "--dir", dir, "--limit", "40", "--block-bytes", "8192", "--verify", synthetic)
	if !strings.Contains(stdout, "verify: ") || strings.Contains(stdout, "verify: 0 checked") {
		t.Errorf("with --verify:\n%s", stdout)
	}
	gi, err := os.ReadFile("../../.gitignore")
	if err != nil || !strings.Contains(string(gi), "\n/kvsim-replay/\n") {
		t.Errorf(".gitignore does not ignore replay's default --dir: %v", err)
	}
}

// TestRunNameStaysInOut: a scenario name from --set that would leave
// --out is refused (exit 2, naming the key) before anything is written.
func TestRunNameStaysInOut(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out", "sub")
	for _, name := range []string{"../../escaped", "a/b", "..", ".hidden"} {
		_, stderr, code := runKvsim("run", "--quiet", "--out", out, "--set", "name="+name, "../../scenarios/hbm_only.toml")
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "(--set): name: ") {
			t.Errorf("name %q: status %d: %s", name, code, stderr)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("files written: %v", ents)
	}
}
