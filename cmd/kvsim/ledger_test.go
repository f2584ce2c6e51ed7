package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kvsim/results"
)

// checkLedger is the ledger's invariant on a summary.json: for each policy
// and tier, the bytes written equal the bytes of the links into that tier,
// their purposes add up to them, and every link's bytes land in some tier.
// TestOutputsGolden checks it on every shipped scenario, the property test
// on random ones.
func checkLedger(s *results.Summary) error {
	for _, p := range s.Policies {
		if p.Ledger == nil {
			return fmt.Errorf("policy %s: no ledger", p.Name)
		}
		into := map[string]int64{}
		var links int64
		for name, l := range p.Links {
			_, to, ok := strings.Cut(name, "->")
			if !ok {
				return fmt.Errorf("policy %s: link %q", p.Name, name)
			}
			into[to] += l.Bytes
			links += l.Bytes
		}
		if len(p.Ledger.Tiers) != len(s.Tiers) {
			return fmt.Errorf("policy %s: ledger of %d tiers, %d in the hierarchy", p.Name, len(p.Ledger.Tiers), len(s.Tiers))
		}
		var written int64
		for i, t := range p.Ledger.Tiers {
			if t.Tier != s.Tiers[i].Name {
				return fmt.Errorf("policy %s: ledger tier %d is %q, not %q", p.Name, i, t.Tier, s.Tiers[i].Name)
			}
			if t.BytesWritten != into[t.Tier] {
				return fmt.Errorf("policy %s: tier %s: ledger wrote %d bytes, its links carried %d into it", p.Name, t.Tier, t.BytesWritten, into[t.Tier])
			}
			var purposes int64
			for _, b := range t.ByPurpose {
				purposes += b
			}
			if purposes != t.BytesWritten {
				return fmt.Errorf("policy %s: tier %s: purposes add up to %d, not %d", p.Name, t.Tier, purposes, t.BytesWritten)
			}
			written += t.BytesWritten
		}
		if written != links {
			return fmt.Errorf("policy %s: ledger wrote %d bytes, links carried %d", p.Name, written, links)
		}
	}
	return nil
}

// ledgerScenario is a small run with a rated ssd and a GPU price.
const ledgerScenario = `name = "wear"
[model]
preset = "llama-3.1-8b"
[gpu]
preset = "h100"
cost_per_hour = 2.5
[[tier]]
kind = "hbm"
capacity = "6GiB"
[[tier]]
kind = "dram"
capacity = "8GiB"
[[tier]]
kind = "ssd"
capacity = "100GB"
dwpd = 1
[workload]
trace = "%s"
limit = 300
[[policy]]
name = "back"
eviction = "lru"
[[policy]]
name = "through-after-2"
eviction = "lru"
write = "through"
admission = "after:2"
`

func writeLedgerScenario(t *testing.T, body string) string {
	t.Helper()
	tr, err := filepath.Abs("../../traces/synthetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wear.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(body, filepath.ToSlash(tr))), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLedgerRun: a run's ledger holds its invariant, rates the ssd, prices
// the tokens, prints its table, and is the same in a second run.
func TestLedgerRun(t *testing.T) {
	path := writeLedgerScenario(t, ledgerScenario)
	var sums []*results.Summary
	for range 2 {
		out := t.TempDir()
		stdout, stderr, code := runKvsim("run", "--parallel", "2", "--out", out, path)
		if code != 0 {
			t.Fatalf("status %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "ssd life y") || !strings.Contains(stdout, "$/M output tok") {
			t.Errorf("no ledger table:\n%s", stdout)
		}
		s, err := results.ReadSummary(filepath.Join(out, "wear", "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkLedger(s); err != nil {
			t.Error(err)
		}
		sums = append(sums, s)
	}
	for i, p := range sums[0].Policies {
		if !reflect.DeepEqual(p.Ledger, sums[1].Policies[i].Ledger) {
			t.Errorf("policy %s: two runs' ledgers differ", p.Name)
		}
		ssd := p.Ledger.Tiers[2]
		if ssd.BytesWritten == 0 || ssd.LifeYears == nil || ssd.RatedBytes != 1*100e9*365*5 {
			t.Errorf("policy %s: ssd %+v", p.Name, ssd)
		}
		if c := p.Ledger.Cost; c.GPUUSD <= 0 || c.USDPerMPromptTokens == nil || c.USDPerMOutputTokens == nil {
			t.Errorf("policy %s: cost %+v", p.Name, c)
		}
	}
}

// TestLedgerBadKeys: a bad rating or price is bad input: exit 2 and
// FILE:LINE: key: why.
func TestLedgerBadKeys(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"dwpd = 1\n", "dwpd = 0\n", `:16: tier "ssd": dwpd: `},
		{"dwpd = 1\n", "dwpd = \"one\"\n", `:16: tier "ssd": dwpd: `},
		{"dwpd = 1\n", "tbw = -5\n", `:16: tier "ssd": tbw: `},
		{"dwpd = 1\n", "service_years = 0\n", `:16: tier "ssd": service_years: `},
		{"cost_per_hour = 2.5\n", "cost_per_hour = -1\n", `:6: gpu: cost_per_hour: `},
	} {
		path := writeLedgerScenario(t, strings.Replace(ledgerScenario, c.from, c.to, 1))
		_, stderr, code := runKvsim("run", "--out", t.TempDir(), path)
		if code != 2 || !strings.Contains(stderr, path+c.want) {
			t.Errorf("%q: status %d, %s", c.to, code, stderr)
		}
	}
}
