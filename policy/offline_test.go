package policy

import "testing"

// Offline is what callers ask instead of a policy's name: belady needs the
// future, and no online policy may be handed one by mistake.
func TestOfflineDeclared(t *testing.T) {
	for _, n := range Names() {
		if got, want := Offline(n), n == "belady"; got != want {
			t.Errorf("Offline(%q) = %v, want %v", n, got, want)
		}
	}
	if Offline("no-such-policy") {
		t.Error("an unknown policy is not offline")
	}
}
