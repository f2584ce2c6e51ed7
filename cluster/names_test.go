package cluster

import (
	"slices"
	"testing"

	"kvsim/scenario"
)

// TestScenarioRouterNames: scenario keeps its own list of router names (it
// must not import this package); each builds here, and the lists agree.
func TestScenarioRouterNames(t *testing.T) {
	for _, name := range scenario.RouterNames() {
		r, err := NewRouter(name, DefaultParams())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.Name() != name {
			t.Errorf("%s names itself %q", name, r.Name())
		}
	}
	if got, want := scenario.RouterNames(), RouterNames(); !slices.Equal(got, want) {
		t.Errorf("scenario's routers %v, cluster's %v", got, want)
	}
}
