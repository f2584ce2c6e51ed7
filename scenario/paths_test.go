package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// A trace or profile path written in the scenario is relative to the
// scenario's folder; one given by --set is relative to the working
// directory, as the shell completed it (the README's injected replay,
// --set workload.trace=azure.csv, used to look beside the scenario). A
// missing trace is one line naming the key's line, or --set, and the
// absolute path looked at.
func TestPathRule(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sc")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"sc/t.jsonl":   `{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1]}` + "\n",
		"cwd.jsonl":    `{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": [1]}` + "\n",
		"sc/hw.toml":   testProfile,
		"cwd-hw.toml":  testProfile,
		"sc/scen.toml": doc("[workload]\ntrace = \"t.jsonl\"\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	scen := filepath.Join("sc", "scen.toml")

	s, err := Load(scen)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("sc", "t.jsonl"); s.Workload.Trace != want || s.CheckTrace() != nil {
		t.Errorf("in the file: trace %s (%v), want %s", s.Workload.Trace, s.CheckTrace(), want)
	}
	s, err = LoadWith(scen, []string{"workload.trace=cwd.jsonl", "profile=cwd-hw.toml"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.Trace != "cwd.jsonl" || s.CheckTrace() != nil || s.Profile != "cwd-hw.toml" {
		t.Errorf("by --set: trace %s (%v), profile %s; want both in the working directory", s.Workload.Trace, s.CheckTrace(), s.Profile)
	}
	if _, err := LoadWith(scen, []string{"profile=hw.toml"}); err == nil {
		t.Errorf("--set profile=hw.toml, a file beside the scenario only: accepted")
	}

	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"workload.trace=t.jsonl"}, scen + " (--set): workload: trace: " + filepath.Join(dir, "t.jsonl") +
			": no such file or directory (a trace path given by --set is relative to the working directory)"},
		{[]string{"workload.trace=../sc/../none.jsonl"}, scen + " (--set): workload: trace: " + filepath.Join(filepath.Dir(dir), "none.jsonl") +
			": no such file or directory (a trace path given by --set is relative to the working directory)"},
	} {
		s, err := LoadWith(scen, tc.sets)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckTrace(); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v\nwant %s", tc.sets, err, tc.want)
		}
	}
	if err := os.WriteFile(scen, []byte(doc("[workload]\ntrace = \"cwd.jsonl\"\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Load(scen)
	if err != nil {
		t.Fatal(err)
	}
	want := scen + ":2: workload: trace: " + filepath.Join(sub, "cwd.jsonl") +
		": no such file or directory (a trace path written in the scenario is relative to its folder)"
	if err := s.CheckTrace(); err == nil || err.Error() != want {
		t.Errorf("in the file: %v\nwant %s", err, want)
	}
}
