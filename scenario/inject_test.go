package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/results"
)

// [workload.inject]: defaults, every key read, and --set reaching it.
func TestInject(t *testing.T) {
	s, err := Parse([]byte(doc("[workload]\ntrace = \"t\"\n[workload.inject]\nsystem_tokens = 1024\ntenants = 8\ntenant_tokens = 512\n"+
		"tenant_zipf = 0.8\nsession_continue = 0.6\nsessions = 100\nsession_gap = 30\nreplace = true\n")), path)
	if err != nil {
		t.Fatal(err)
	}
	want := results.Inject{Replace: true, SystemTokens: 1024, Tenants: 8, TenantTokens: 512, TenantZipf: 0.8, SessionContinue: 0.6, Sessions: 100, SessionGap: 30}
	if s.Workload.Inject == nil || *s.Workload.Inject != want {
		t.Errorf("inject %+v, want %+v", s.Workload.Inject, want)
	}
	if d := s.Describe(); !strings.Contains(d, "block ids injected into every request: system_tokens=1024 tenants=8 tenant_tokens=512 tenant_zipf=0.8 session_continue=0.6 sessions=100 session_gap=30 seed=1)") {
		t.Errorf("Describe:\n%s", d)
	}
	// An empty table: the defaults; none: nil (the trace's own ids).
	s, err = Parse([]byte(doc("[workload]\ntrace = \"t\"\n[workload.inject]\n")), path)
	if err != nil || *s.Workload.Inject != (results.Inject{TenantZipf: 1, Sessions: 64}) {
		t.Errorf("defaults %+v %v", s.Workload.Inject, err)
	}
	if s, err = Parse([]byte(doc("")), path); err != nil || s.Workload.Inject != nil {
		t.Errorf("no table: %+v %v", s.Workload.Inject, err)
	}
	// The inline form and --set, which creates the table.
	s, err = ParseWith([]byte(doc("[workload]\ntrace = \"t\"\ninject = { sessions = 5 }\n")), path, []string{"workload.inject.session_continue=0.25"})
	if err != nil || s.Workload.Inject.Sessions != 5 || s.Workload.Inject.SessionContinue != 0.25 {
		t.Errorf("inline and --set: %+v %v", s.Workload.Inject, err)
	}
	s, err = ParseWith([]byte(setBase), "x.toml", []string{"workload.inject.tenants=3", "workload.inject.tenant_tokens=100"})
	if err != nil || s.Workload.Inject.Tenants != 3 || s.Workload.Inject.TenantTokens != 100 {
		t.Errorf("--set on a file without the table: %+v %v", s.Workload.Inject, err)
	}
}

func TestInjectErrors(t *testing.T) {
	in := func(body string) string { return doc("[workload]\ntrace = \"t\"\n[workload.inject]\n" + body) }
	for _, tc := range []struct{ name, src, want string }{
		{"unknown key", in("sesions = 3\n"), `scenarios/x.toml:4: unknown key "sesions" in [workload.inject]`},
		{"type", in("sessions = \"many\"\n"), `scenarios/x.toml:4: workload.inject: sessions: must be an integer, got string "many"`},
		{"sessions", in("sessions = 0\n"), `scenarios/x.toml:4: workload.inject: sessions: must be >= 1`},
		{"sessions max", in("sessions = 2000000\n"), `scenarios/x.toml:4: workload.inject: sessions: must be <= 1048576`},
		{"continue", in("session_continue = 1.5\n"), `scenarios/x.toml:4: workload.inject: session_continue: must be a probability in 0..1`},
		{"continue negative", in("session_continue = -0.5\n"), `scenarios/x.toml:4: workload.inject: session_continue: must be a probability in 0..1`},
		{"zipf", in("tenants = 2\ntenant_zipf = 11\n"), `scenarios/x.toml:5: workload.inject: tenant_zipf: must be a number in 0..10`},
		{"tenant tokens alone", in("tenant_tokens = 512\n"), `scenarios/x.toml:4: workload.inject: tenant_tokens: needs tenants >= 1`},
		{"gap", in("session_gap = -1\n"), `scenarios/x.toml:4: workload.inject: session_gap: must be >= 0`},
		{"not a table", doc("[workload]\ntrace = \"t\"\ninject = 3\n"), `scenarios/x.toml:3: workload: inject: must be a table ([workload.inject]), got integer 3`},
	} {
		_, err := Parse([]byte(tc.src), path)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
	_, err := ParseWith([]byte(setBase), "x.toml", []string{"workload.inject.sessions=0"})
	if err == nil || !strings.Contains(err.Error(), "(--set): workload.inject: sessions: must be >= 1") {
		t.Errorf("--set: %v", err)
	}
	_, err = ParseWith([]byte(setBase), "x.toml", []string{"workload.injekt.sessions=2"})
	if err == nil || !strings.Contains(err.Error(), "three parts name an entry of") {
		t.Errorf("--set misspelt: %v", err)
	}
}

// LoadInject reads a file's [workload.inject] through the same schema as a
// scenario: the same values, defaults and FILE:LINE messages; other tables
// are not read.
func TestLoadInject(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "i.toml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := write("# trace fit\n[model]\nbogus = 1\n[workload.inject]\nreplace = true\nsystem_tokens = 512\nsession_continue = 0.5\n")
	got, err := LoadInject(p)
	want := results.Inject{Replace: true, SystemTokens: 512, TenantZipf: 1, SessionContinue: 0.5, Sessions: 64}
	if err != nil || *got != want {
		t.Errorf("LoadInject = %+v, %v; want %+v", got, err, want)
	}
	for _, tc := range []struct{ body, want string }{
		{"[workload]\nx = 1\n", p + ": has no [workload.inject] table"},
		{"[workload.inject]\nsesions = 2\n", p + `:2: unknown key "sesions" in [workload.inject]`},
		{"[workload.inject]\nsessions = 0\n", p + ":2: workload.inject: sessions: must be >= 1"},
		{"[workload.inject]\n\ntenant_tokens = 5\n", p + ":3: workload.inject: tenant_tokens: needs tenants >= 1"},
		{"[workload.inject\n", p + ":1: toml: expected '.' or ']' to end table name, but got '\\n' instead"},
	} {
		p := write(tc.body)
		if _, err := LoadInject(p); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.body, err, tc.want)
		}
	}
	if _, err := LoadInject(filepath.Join(dir, "none.toml")); err == nil || !strings.Contains(err.Error(), "none.toml: no such file") {
		t.Errorf("missing file: %v", err)
	}
}
