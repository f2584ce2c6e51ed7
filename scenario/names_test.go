package scenario

import (
	"strings"
	"testing"
)

// TestNamesArePathSafe: scenario and tier names become folders (OUT/<name>,
// DIR/tier-<name>), so a name that could leave its parent folder, hide, or
// need quoting is refused at load, from the file or from --set alike, with
// the file, line and key.
func TestNamesArePathSafe(t *testing.T) {
	long := strings.Repeat("a", MaxNameLen+1)
	bad := []string{"x/..", "..", ".", "../out", "a/b", `a\b`, ".hidden", "a b", "a:b", "é", "a\x00b", long}
	for _, name := range bad {
		q := `"` + strings.NewReplacer(`\`, `\\`, "\x00", `\u0000`).Replace(name) + `"`
		// In the file: the message names file:line and key.
		_, err := Parse([]byte(doc("name = "+q+"\n")), path)
		if err == nil || !strings.HasPrefix(err.Error(), "scenarios/x.toml:1: name: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("name %q: %v", name, err)
		}
		src := doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"ssd\"\nname = " + q + "\n")
		_, err = Parse([]byte(src), path)
		if err == nil || !strings.HasPrefix(err.Error(), "scenarios/x.toml:5: tier ") || !strings.Contains(err.Error(), ": name: ") {
			t.Errorf("tier name %q: %v", name, err)
		}
		// Through --set: the same check, said to come from the command line.
		_, err = ParseWith([]byte(setBase), "x.toml", []string{"name=" + q})
		if err == nil || !strings.HasPrefix(err.Error(), "x.toml (--set): name: ") {
			t.Errorf("--set name=%q: %v", name, err)
		}
		_, err = ParseWith([]byte(setBase), "x.toml", []string{"tier.ssd.name=" + q})
		if err == nil || !strings.HasPrefix(err.Error(), `x.toml (--set): tier `) || !strings.Contains(err.Error(), ": name: ") {
			t.Errorf("--set tier.ssd.name=%q: %v", name, err)
		}
	}
	// A name that does not fit, taken from the file name, says so.
	if _, err := Parse([]byte(doc("")), "dir/my scenario.toml"); err == nil || !strings.Contains(err.Error(), `name: the default, the file's name "my scenario"`) {
		t.Errorf("default name from a file name with a space: %v", err)
	}
	for _, name := range []string{"quickstart", "hbm_dram-2.v1", "A9", strings.Repeat("z", MaxNameLen)} {
		s, err := ParseWith([]byte(setBase), "x.toml", []string{"name=" + name, "tier.host.name=" + name, "link.2.from=" + name, "link.1.to=" + name})
		if err != nil || s.Name != name || s.Tiers[1].Name != name {
			t.Errorf("good name %q: %v", name, err)
		}
	}
}
