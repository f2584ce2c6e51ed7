package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayDevice: an nvmeof tier given a device (here a blank file
// standing in for the namespace, as the note says) keeps its blocks there
// and serves them back intact; a device holding someone else's data is
// refused with exit status 2 and left as it was.
func TestReplayDevice(t *testing.T) {
	dir := replayDir(t)
	img, _ := filepath.Abs(filepath.Join(dir, "ns.img"))
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 1<<30); err != nil {
		t.Fatal(err)
	}
	args := []string{"replay", "--real", "--verify", "--scenario", "../../scenarios/remote_tiers.toml",
		"--set", `tier.nvmeof.device="` + img + `"`, "--set", "tier.remote.capacity=16GiB", "--limit", "300", "--block-bytes", "65536", "--dir", dir, "../../traces/synthetic.jsonl"}
	stdout, stderr, code := runKvsim(args...)
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if out := stdout + stderr; !strings.Contains(out, "a file standing in for an NVMe-oF namespace (no fabric)") || !strings.Contains(out, "claimed now") {
		t.Errorf("the note does not say what the device is: %s", out)
	}
	r := readReplay(t, filepath.Join(dir, "replay.json"))
	if r.Verify.Checked == 0 || r.Verify.Corrupt != 0 || r.Lost["nvmeof"] != 0 || r.Links["remote->nvmeof"].Count+r.Links["nvmeof->remote"].Count == 0 {
		t.Fatalf("verify %+v, lost %v, links %v", r.Verify, r.Lost, r.Links)
	}
	// Someone else's data in the first sector: refused, untouched.
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte{0xab}, 4096), 0)
	f.Close()
	before, _ := os.ReadFile(img)
	_, stderr, code = runKvsim(args...)
	if code != 2 || !strings.Contains(stderr, "will not overwrite") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Fatalf("a foreign device: status %d, %q", code, stderr)
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Fatal("a refused device was changed")
	}
}
