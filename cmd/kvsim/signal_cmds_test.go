package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"kvsim/internal/atomicfile"
	"kvsim/internal/testenv"
)

// TestCommandsInterrupted sends SIGINT (or SIGTERM) to each long-running
// command once it is at work: each exits 130 within 3 seconds, saying
// only that it was interrupted, and leaves no output and no temporary
// file of its own (only the results folders' locks, which no one holds).
func TestCommandsInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dozen kvsim processes")
	}
	// The binary cache a large trace gets on first read is not what is
	// tested here.
	t.Setenv("KVSIM_TRACE_CACHE", "off")
	shared := t.TempDir()
	// A trace of 600,000 requests (130 MB), read in seconds.
	big := filepath.Join(shared, "big.jsonl")
	if _, stderr, code := runKvsim("gen", "--requests", "600000", "--out", big); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		args func(dir string) []string
		// atWork reports that the process has started its long part (nil:
		// after a moment).
		atWork func(dir string) bool
		// allowed lists the names dir may hold afterwards.
		allowed []string
		// setup, if set, prepares dir.
		setup func(t *testing.T, dir string)
	}{
		{name: "gen --out", sig: syscall.SIGINT,
			args: func(dir string) []string {
				return []string{"gen", "--requests", "100000000", "--out", filepath.Join(dir, "g.jsonl")}
			},
			atWork: func(dir string) bool { return hasTemp(dir, atomicfile.For("g.jsonl")) }},
		{name: "gen stdout", sig: syscall.SIGTERM,
			args: func(string) []string { return []string{"gen", "--format", "azure", "--requests", "1000000000"} }},
		{name: "iobench write", sig: syscall.SIGINT,
			args: func(dir string) []string {
				return []string{"iobench", "--file", filepath.Join(dir, "x.dat"), "--size", "1GiB", "--bs", "4KiB", "--qd", "1", "--engine", "pread", "--rw", "write"}
			},
			atWork: func(dir string) bool { _, err := os.Stat(filepath.Join(dir, "x.dat")); return err == nil }},
		{name: "iobench read", sig: syscall.SIGTERM,
			args: func(dir string) []string {
				return []string{"iobench", "--file", filepath.Join(dir, "x.dat"), "--size", "1GiB", "--bs", "4KiB", "--qd", "2", "--rw", "read"}
			},
			atWork: func(dir string) bool { _, err := os.Stat(filepath.Join(dir, "x.dat")); return err == nil }},
		{name: "sweep", sig: syscall.SIGINT,
			args: func(dir string) []string {
				return []string{"sweep", "--quiet", "--tier", "hbm", "--capacities", "20GiB,40GiB", "--out", dir,
					"--set", "workload.requests=1000000", "../../scenarios/synthetic_seed.toml"}
			},
			allowed: []string{"synthetic_seed-hbm-20GiB", "synthetic_seed-hbm-40GiB", "synthetic_seed-hbm-20GiB/.kvsim.lock", "synthetic_seed-hbm-40GiB/.kvsim.lock"}},
		{name: "trace stats", sig: syscall.SIGINT,
			args: func(string) []string { return []string{"trace", "stats", big} }},
		{name: "trace fit", sig: syscall.SIGTERM,
			args: func(string) []string { return []string{"trace", "fit", "--trace", big} }},
		{name: "trace convert", sig: syscall.SIGINT,
			args: func(dir string) []string { return []string{"trace", "convert", big, filepath.Join(dir, "b.kvtc")} }},
		{name: "mrc --html", sig: syscall.SIGINT,
			args: func(dir string) []string {
				return []string{"mrc", "--trace", big, "--policies", "lru,fifo,s3fifo,arc", "--sizes", "1000,10000,100000,1000000", "--html", filepath.Join(dir, "m.html")}
			}},
		{name: "mrc --bench", sig: syscall.SIGINT,
			args: func(string) []string {
				return []string{"mrc", "--trace", big, "--policies", "lru,fifo,s3fifo,arc", "--sizes", "1000,10000,100000,1000000", "--bench"}
			}},
		{name: "report", sig: syscall.SIGTERM,
			setup: bigResults,
			args:  func(dir string) []string { return []string{"report", filepath.Join(dir, "quickstart")} },
			allowed: []string{"quickstart", "quickstart/.kvsim.lock", "quickstart/summary.json", "quickstart/requests.csv",
				"quickstart/report.html"}},
		{name: "calibrate", sig: syscall.SIGINT,
			args:    func(dir string) []string { return []string{"calibrate", "--dir", dir} },
			allowed: []string{"tier-ssd", "tier-ssd/kvsim-store"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := replayDir(t) // on disk, not tmpfs: calibrate and iobench use O_DIRECT
			if c.setup != nil {
				c.setup(t, dir)
			}
			var stderr bytes.Buffer
			cmd := startMain(t, &stderr, c.args(dir)...)
			start := time.Now()
			for atWork := false; !atWork; {
				time.Sleep(20 * time.Millisecond)
				if cmd.exited() {
					cmd.wait(t) // its output copied whole before it is read
					t.Fatalf("exited before the signal: %s", stderr.String())
				}
				if time.Now().After(testenv.Deadline(t)) {
					t.Fatal("never at work")
				}
				atWork = time.Since(start) > 700*time.Millisecond && (c.atWork == nil || c.atWork(dir))
			}
			time.Sleep(200 * time.Millisecond)
			cmd.cmd.Process.Signal(c.sig)
			code, took := cmd.wait(t) // the logged time is the figure
			t.Logf("stopped %v after %v", took, c.sig)
			if code != 130 {
				t.Fatalf("exit %d after %v, want 130; stderr: %s", code, c.sig, stderr.String())
			}
			if got := strings.TrimSpace(stderr.String()); got != "kvsim: interrupted" {
				t.Errorf("stderr %q, want one line saying it was interrupted", got)
			}
			filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
				rel, _ := filepath.Rel(dir, p)
				for _, a := range append(c.allowed, ".") {
					if rel == a {
						return nil
					}
				}
				t.Errorf("left behind %s", rel)
				return nil
			})
		})
	}
}

// hasTemp says whether dir holds a temporary of kind k.
func hasTemp(dir string, k atomicfile.Temp) bool {
	ents, _ := os.ReadDir(dir)
	return slices.ContainsFunc(ents, func(e os.DirEntry) bool { return k.Match(e.Name()) })
}

// bigResults leaves in dir/quickstart the results of a short run whose
// requests.csv is then made 200 MB long (its rows repeated), which takes
// kvsim report seconds to read.
func bigResults(t *testing.T, dir string) {
	if _, stderr, code := runKvsim("run", "--quiet", "--out", dir, "--limit", "300", "../../scenarios/quickstart.toml"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	p := filepath.Join(dir, "quickstart", "requests.csv")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	head, rows, _ := bytes.Cut(b, []byte("\n"))
	big := append(append(head, '\n'), bytes.Repeat(rows, (200<<20)/len(rows)+1)...)
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
}
