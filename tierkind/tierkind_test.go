package tierkind

import "testing"

// TestSpecs: every kind says what it is, has positive defaults and a
// calibrate store; a kind with keys names its article and documents them.
func TestSpecs(t *testing.T) {
	if Names()[0] != "hbm" {
		t.Errorf("the hierarchy starts at %s, not hbm", Names()[0])
	}
	for _, n := range Names() {
		s, _ := Lookup(n)
		if s.Brief == "" || s.Calibrated == "" || s.Capacity <= 0 || s.Bandwidth <= 0 || s.Latency < 0 || s.CostPerGB < 0 {
			t.Errorf("%s: incomplete spec %+v", n, s)
		}
		if len(s.Keys) > 0 && s.Article != "a" && s.Article != "an" {
			t.Errorf("%s: has keys but no article (a or an)", n)
		}
		for _, k := range s.Keys {
			if k.Doc == "" || Owner(k.Name) != n {
				t.Errorf("%s: key %s undocumented or declared twice", n, k.Name)
			}
		}
	}
}
