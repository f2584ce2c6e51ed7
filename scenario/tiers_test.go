package scenario

import (
	"strconv"
	"strings"
	"testing"

	"kvsim/core"
)

// TestTooManyTiers: the core tracks residency in a bitmask of MaxTiers
// tiers, so the loader refuses more (before, such a scenario loaded and
// every run of it failed later, without a line).
func TestTooManyTiers(t *testing.T) {
	tiers := "[[tier]]\nkind = \"hbm\"\n"
	for i := 1; i < core.MaxTiers; i++ {
		tiers += "[[tier]]\nname = \"d" + string(rune('0'+i)) + "\"\nkind = \"dram\"\n"
	}
	if s, err := Parse([]byte(doc(tiers)), path); err != nil || len(s.Tiers) != core.MaxTiers {
		t.Fatalf("%d tiers: %v", core.MaxTiers, err)
	}
	more := tiers + "[[tier]]\nname = \"extra\"\nkind = \"ssd\"\n"
	_, err := Parse([]byte(doc(more)), path)
	want := "scenarios/x.toml:" + strconv.Itoa(strings.Count(tiers, "\n")+1) + `: tier 9: too many tiers: at most 8`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
