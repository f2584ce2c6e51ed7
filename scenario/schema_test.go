package scenario

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"kvsim/core"
	"kvsim/internal/golden"
)

// A loaded policy carries core's strategy values, parsed from its keys.
func TestPolicyStrategy(t *testing.T) {
	s, err := Parse([]byte(doc("[[policy]]\neviction = \"lru\"\n"+
		"[[policy]]\nname = \"all\"\neviction = \"lru\"\nadmission = \"after:3\"\nwrite = \"through\"\npromotion = \"second-hit\"\n"+
		"prefetch = \"timeout\"\nprefetch_timeout = \"5ms\"\nrecompute = \"when-cheaper\"\n"+
		"[[policy]]\nname = \"never\"\neviction = \"lru\"\npromotion = \"never\"\nprefetch = \"wait_complete\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	want := []core.Strategy{
		{},
		{AdmitAfter: 3, WriteThrough: true, Promotion: core.PromoteSecondHit, Prefetch: core.PrefetchTimeout, PrefetchTimeout: 5e6, RecomputeWhenCheaper: true},
		{Promotion: core.PromoteNever, Prefetch: core.PrefetchWaitComplete},
	}
	for i, p := range s.Policies {
		if p.Strategy != want[i] {
			t.Errorf("policy %s: strategy %+v, want %+v", p.Name, p.Strategy, want[i])
		}
	}
}

// The parsed strategy stays out of the scenario's JSON: kvsim's run_id
// hashes it, and results of earlier runs must keep their ids.
func TestStrategyNotInJSON(t *testing.T) {
	s, err := Parse([]byte(doc("[[policy]]\neviction = \"lru\"\nwrite = \"through\"\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Strategy") || strings.Contains(string(b), "WriteThrough") {
		t.Errorf("the scenario's JSON has the parsed strategy: %s", b)
	}
}

// refBlock finds the reference in a document: the lines between the line
// starting with start and the next line equal to end.
func refBlock(t *testing.T, text, file, start, end string) (from, to int) {
	t.Helper()
	i := strings.Index(text, "\n"+start)
	if i < 0 {
		t.Fatalf("%s: no line starting %q", file, start)
	}
	from = i + 1 + strings.IndexByte(text[i+1:], '\n') + 1
	j := strings.Index(text[from:], "\n"+end+"\n")
	if j < 0 {
		t.Fatalf("%s: no %q after %q", file, end, start)
	}
	return from, from + j + 1
}

// The scenario reference in doc.go and in the README is Reference's,
// rendered from the schema: a key added, renamed, re-ranged or given a
// new default changes them (go test ./scenario -run TestReference -update).
func TestReference(t *testing.T) {
	ref := Reference()
	var m map[string]any
	if _, err := toml.Decode(ref, &m); err != nil {
		t.Errorf("the reference is not TOML: %v", err)
	}
	var godoc strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(ref, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			godoc.WriteString("//\n")
		} else {
			godoc.WriteString("//\t" + l)
		}
	}
	godoc.WriteString("\n")
	for _, d := range []struct{ file, start, end, want string }{
		{"doc.go", "// Layout", "//", godoc.String()},
		{"../README.md", "<!-- scenario reference", "```", ref},
	} {
		b, err := os.ReadFile(d.file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		from, to := refBlock(t, text, d.file, d.start, d.end)
		if d.file == "doc.go" { // after the "//" line that opens the block
			from += len("//\n")
			to = from + strings.Index(text[from:], "//\n// Tier defaults")
		} else { // after the "```toml" line
			from += strings.IndexByte(text[from:], '\n') + 1
		}
		// The file as it would be with the schema's reference: the golden
		// harness diffs it, and -update writes it.
		golden.Check(t, d.file, []byte(text[:from]+d.want+text[to:]))
	}
}

// Every declared key is read by the loader: a scenario that sets each one
// to a wrong type fails naming it (a declaration the code forgot would be
// accepted silently).
func TestEveryKeyRead(t *testing.T) {
	// what each table needs to get as far as reading every key
	base := map[string]string{
		"model":           "[model]\nlayers = 1\nkv_heads = 1\nhead_dim = 1\n",
		"gpu":             "[gpu]\n",
		"tier":            "[[tier]]\nkind = \"hbm\"\n",
		"link":            "[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"dram\"\n[[link]]\nfrom = \"hbm\"\nto = \"dram\"\n",
		"workload":        "[workload]\ntrace = \"t\"\n",
		"workload.inject": "[workload]\ntrace = \"t\"\n[workload.inject]\n",
		"policy":          "[[policy]]\neviction = \"lru\"\n",
		"slo":             "[slo]\n",
		"cluster":         "[cluster]\ninstances = 2\n",
	}
	for _, s := range schema {
		for _, f := range s.fields {
			b := base[s.name]
			switch f.Only {
			case synthetic:
				b = "[workload]\nformat = \"synthetic\"\n"
			case roofline, linear:
				b = "[gpu]\n" + f.Only + "\n"
			}
			var lines []string
			for _, l := range strings.SplitAfter(b, "\n") {
				if !strings.HasPrefix(l, f.Name+" = ") {
					lines = append(lines, l)
				}
			}
			src := doc(strings.Join(lines, "") + f.Name + " = [1]\n") // an array is no key's type
			_, err := Parse([]byte(src), path)
			if err == nil || !strings.Contains(err.Error(), f.Name+": must be") {
				t.Errorf("%s.%s set to an array: got %v, want a type error naming it", s.name, f.Name, err)
			}
		}
	}
}
