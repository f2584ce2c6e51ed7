package scenario

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		doc(""),
		fullTOML,
		doc("tier = [{kind = \"hbm\"}, {kind = \"dram\", capacity = -1}]\n"),
		doc("name = \"\"\"\n[[tier]]\ncapacity = 1\n\"\"\"\n"),
		doc("[[tier]]\nkind = \"hbm\"\n[[tier]]\nkind = \"ssd\"\n[[link]]\nfrom = \"ssd\"\nto = \"hbm\"\nlanes = 3\n"),
		doc("[model]\nlayers = 16777216\nkv_heads = 16777216\nhead_dim = 16777216\n"),
		doc("[[policy]]\neviction = \"scenario_test_params\"\nalpha = 1\nbeta = 2\n"),
		doc("a.b.c = 1\n'q.k' = \"x\"\n\"x\\ny\" = 2\n"),
		"[model\n",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse([]byte(src), "f.toml")
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("multi-line error: %q", msg)
			}
			if !strings.HasPrefix(msg, "f.toml:") {
				t.Fatalf("error does not name the file: %q", msg)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error is %T", err)
			}
			return
		}
		if len(s.Tiers) == 0 || s.Tiers[0].Kind != "hbm" || len(s.Policies) == 0 || s.Model.BytesPerBlock() <= 0 {
			t.Fatalf("invalid scenario accepted: %+v", s)
		}
		for _, l := range s.Links {
			if l.From < 0 || l.From >= len(s.Tiers) || l.To < 0 || l.To >= len(s.Tiers) || l.From == l.To || !(l.Bandwidth > 0) || l.Lanes < 1 {
				t.Fatalf("bad link %+v", l)
			}
		}
		_ = s.Describe()
	})
}
