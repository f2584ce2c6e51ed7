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
	args := []string{"replay", "--real", "--mirror", "--verify", "--scenario", "../../scenarios/remote_tiers.toml",
		"--set", `tier.nvmeof.device="` + img + `"`, "--set", "tier.remote.capacity=16GiB", "--set", "tier.nvmeof.capacity=512GiB", "--limit", "300", "--block-bytes", "65536", "--dir", dir, "../../traces/synthetic.jsonl"}
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

// blankImage is a blank file of n bytes standing in for a namespace.
func blankImage(t *testing.T, dir string, n int64) string {
	t.Helper()
	img, _ := filepath.Abs(filepath.Join(dir, "ns.img"))
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, n); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestReplayDeviceFull: a whole replay fills the device tier (1600 full
// blocks' worth, 64 KiB each, many of its blocks shorter) and loses no
// copy: the core evicts from the tier before its slots run out, as it
// does for the bucket store. It lost copies (exit 3, "all 1600 slots
// full") when the core counted bytes only.
func TestReplayDeviceFull(t *testing.T) {
	dir := replayDir(t)
	img := blankImage(t, dir, 200<<20)
	_, stderr, code := runKvsim("replay", "--real", "--mirror", "--scenario", "../../scenarios/remote_tiers.toml", "--set", `tier.nvmeof.device="`+img+`"`,
		"--set", "tier.remote.capacity=16GiB", "--set", "tier.nvmeof.capacity=100GiB", "--block-bytes", "65536", "--dir", dir, "../../traces/synthetic.jsonl")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	r := readReplay(t, filepath.Join(dir, "replay.json"))
	if r.Lost["nvmeof"] != 0 || r.Evictions["nvmeof"] == 0 || r.Links["remote->nvmeof"].Failed != 0 {
		t.Fatalf("lost %v, evictions %v, link %+v", r.Lost, r.Evictions, r.Links["remote->nvmeof"])
	}
}

// TestReplayDeviceTooSmall: a device with fewer slots than the tier's
// capacity is refused before the replay starts, exit 2, one line naming
// the tier, the device and both sizes; the device is left as it was.
func TestReplayDeviceTooSmall(t *testing.T) {
	dir := replayDir(t)
	img := blankImage(t, dir, 200<<20)
	_, stderr, code := runKvsim("replay", "--real", "--mirror", "--scenario", "../../scenarios/remote_tiers.toml", "--set", `tier.nvmeof.device="`+img+`"`,
		"--set", "tier.remote.capacity=16GiB", "--set", "tier.nvmeof.capacity=300GiB", "--limit", "10", "--block-bytes", "65536", "--dir", dir, "../../traces/synthetic.jsonl")
	msg := strings.TrimSpace(stderr)
	if code != 2 || strings.Contains(msg, "\n") {
		t.Fatalf("status %d: %q", code, stderr)
	}
	for _, want := range []string{`tier "nvmeof"`, img, "200 MiB", "301 MiB", "too small"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q: %s", want, msg)
		}
	}
	if b, _ := os.ReadFile(img); bytes.Count(b, []byte{0}) != len(b) {
		t.Error("a refused device was written")
	}
}
