package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testProfile = `machine = "m"
date = "d"
[[link]]
from = "hbm"
to = "pinned"
bandwidth = "8GB/s"
reverse_bandwidth = "6GB/s"
latency = "1us"
reverse_latency = "2us"

[[link]]
from = "ssd"
to = "pinned"
bandwidth = "1GB/s"
reverse_bandwidth = "3GB/s"
latency = "90us"

[measurements]
"anything" = 1.5
`

// TestProfile: a scenario's profile replaces default link figures by tier
// kind, either way round; keys a [[link]] gives still win; ApplyProfile
// overrides them too.
func TestProfile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hw.toml"), []byte(testProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	tiers := "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"pinned\"\n[[tier]]\nkind = \"ssd\"\n"
	s, err := Parse([]byte(doc("profile = \"hw.toml\"\n"+tiers)), filepath.Join(dir, "s.toml"))
	if err != nil {
		t.Fatal(err)
	}
	l0, l1 := s.Links[0], s.Links[1]
	if l0.Bandwidth != 8e9 || l0.ReverseBandwidth != 6e9 || l0.Latency != 1000 || l0.ReverseLatency != 2000 {
		t.Errorf("hbm->pinned %+v", l0)
	}
	// The profile measured ssd->pinned; the chain runs pinned->ssd.
	if l1.Bandwidth != 3e9 || l1.ReverseBandwidth != 1e9 || l1.Latency != 90000 || l1.ReverseLatency != 90000 {
		t.Errorf("pinned->ssd %+v", l1)
	}
	if !strings.Contains(s.Describe(), "hardware profile") {
		t.Errorf("Describe does not name the profile:\n%s", s.Describe())
	}

	explicit := "profile = \"hw.toml\"\n" + tiers + "[[link]]\nfrom = \"hbm\"\nto = \"pinned\"\nbandwidth = \"25GB/s\"\n[[link]]\nfrom = \"pinned\"\nto = \"ssd\"\n"
	s, err = Parse([]byte(doc(explicit)), filepath.Join(dir, "s.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Links[0]; l.Bandwidth != 25e9 || l.ReverseBandwidth != 25e9 || l.Latency != 1000 {
		t.Errorf("explicit bandwidth should win, the rest come from the profile: %+v", l)
	}
	p, err := LoadProfile(filepath.Join(dir, "hw.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s.ApplyProfile(p)
	if l := s.Links[0]; l.Bandwidth != 8e9 {
		t.Errorf("ApplyProfile should override: %+v", l)
	}

	for _, c := range []struct{ body, want string }{
		{"[[link]]\nfrom = \"hbm\"\nto = \"gpu\"\nbandwidth = \"1GB/s\"\n", `link 1: to: unknown tier kind "gpu"`},
		{"[[link]]\nfrom = \"hbm\"\nto = \"ssd\"\nbandwidth = \"fast\"\n", `link 1: bandwidth: want a positive bandwidth, got "fast"`},
		{"[[link]]\nfrom = \"hbm\"\nto = \"ssd\"\nbandwidth = \"1GB/s\"\nlatency = \"-1us\"\n", `link 1: latency: want a duration >= 0`},
		{"bogus = 1\n", `unknown key "bogus"`},
	} {
		f := filepath.Join(dir, "bad.toml")
		os.WriteFile(f, []byte(c.body), 0o644)
		if _, err := LoadProfile(f); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.toml") {
			t.Errorf("%q: %v, want %q", c.body, err, c.want)
		}
	}
	if _, err := LoadProfile("/dev/null"); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("/dev/null: %v", err)
	}
	if _, err := Parse([]byte(doc("profile = \"nope.toml\"\n")), filepath.Join(dir, "s.toml")); err == nil || !strings.Contains(err.Error(), "s.toml:1") {
		t.Errorf("missing profile: %v", err)
	}
}
