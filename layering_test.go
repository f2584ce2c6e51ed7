package kvsim_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowed lists, per package directory, the project packages it may
// import; policy may import only param (the key declaration, itself
// standard library only) and no third-party code at all.
// sim and hw never see each other: the core is the one brain, they are its
// bodies; experiment runs simulations and links no device library, hwrun
// is the one place that wires the real body (replay, calibrate). Every package is
// listed: a new one fails the test until it is placed here. An entry also
// admits the entry's sub-packages (hw admits hw/x); a sub-package itself
// needs its own row. Every directory under cmd is a command and uses the
// cmd row.
var allowed = map[string][]string{
	"param":      {}, // the one declaration of a configuration key
	"policy":     {"param"},
	"core":       {"policy"},
	"core/sched": {"core"},                         // the batched engine's step scheduler: one for both bodies (sim, hw/live)
	"trace":      {"param", "internal/atomicfile"}, // param: the format registry
	"tierkind":   {"param", "internal/endpoint"},   // a tier kind's spec: defaults, keys, calibrate store
	"results":    {"internal/tomlguard", "internal/atomicfile"},
	"scenario":   {"core", "param", "policy", "trace", "cluster", "tierkind", "results", "internal/endpoint", "internal/tomlguard"},
	"workload":   {"core", "policy", "trace"},
	"sim":        {"core", "policy"},
	"cluster":    {"core", "param", "policy", "sim", "internal/minheap"},
	"hw":         {"core", "policy", "hw/accel", "hw/bucket", "hw/hostmem", "hw/store", "hw/ioengine", "hw/payload", "hw/remote", "hw/rdmastore", "hw/blockdev"},
	// hw's parts, by device: each imports only the parts below it.
	"hw/live":              {"core", "core/sched", "hw/store", "hw/ioengine", "hw/payload", "internal/minheap"}, // the live body: the core and the step scheduler on a clock, moves on the stores
	"hw/ioengine":          {"hw/internal/sys"},
	"hw/payload":           {},
	"hw/store":             {},           // the store contract and its capabilities: standard library only
	"hw/store/storetest":   {"hw/store"}, // the conformance suite every store runs (testHelpers)
	"hw/hostmem":           {"hw/store", "hw/ioengine", "hw/internal/sys"},
	"hw/bucket":            {"hw/store", "hw/ioengine", "hw/hostmem", "hw/internal/sys"},
	"hw/accel":             {"hw/store", "hw/ioengine", "hw/hostmem", "hw/internal/sys"},
	"hw/blockdev":          {"hw/store", "hw/hostmem", "hw/ioengine"},                  // nvmeof on a raw device
	"hw/rdma":              {"hw/internal/sys"},                                        // the verbs path: libibverbs by purego, for the remote tiers
	"hw/rdma/rdmatest":     {},                                                         // the fake libibverbs, for tests (testHelpers)
	"hw/rdmastore":         {"hw/store", "hw/hostmem", "hw/rdma", "internal/endpoint"}, // remote DRAM over RDMA: the client store and kvsim serve's server
	"hw/doctor":            {"hw", "hw/accel", "hw/hostmem", "hw/store", "hw/ioengine", "hw/payload", "hw/rdma"},
	"hw/remote":            {"hw/store", "hw/hostmem", "internal/endpoint"},
	"hw/remote/remotetest": {}, // a redis-server of a test's own (testHelpers)
	"hw/internal/sys":      {},
	"hw/internal/hwtest":   {}, // hw's test helpers (testHelpers)
	"mrc":                  {"param", "policy", "trace"},
	"report":               {"results"},
	"events":               {},                                                                                                                                                   // engines' KV events: wire formats, ZMQ recorder and publisher, the event log
	"experiment":           {"core", "policy", "tierkind", "trace", "results", "report", "scenario", "workload", "sim", "cluster", "mrc", "internal/atomicfile"},                 // report: it writes whole results folders
	"hwrun":                {"core", "policy", "tierkind", "trace", "results", "scenario", "sim", "hw", "hw/bucket", "hw/doctor", "hw/live", "experiment", "validate", "report"}, // the real runner: replay --real and calibrate's profile
	"validate":             {"core", "policy", "trace", "scenario", "sim", "workload", "experiment", "report"},                                                                   // a real run's records replayed and compared (kvsim validate)
	"internal/testenv":     {},                                                                                                                                                   // test helpers for _test.go files (testHelpers); no package lists them
	"internal/golden":      {},
	"internal/endpoint":    {}, // a remote_dram endpoint's one parser (scenario, hw/remote, hw/rdmastore)
	"internal/tomlguard":   {}, // size and nesting limits checked before any TOML is decoded (scenario, results)
	"internal/atomicfile":  {},
	"internal/minheap":     {},                 // a binary heap over a slice, ordered by a function (cluster's follow-ups, the live body's timers)                 // writing a file whole (temporary + rename), and the temporaries' names
	"internal/coretest":    {"core", "policy"}, // driving a core by hand in tests (testHelpers)
	"cmd":                  nil,                // the leaf: flags, printing and exit codes over all of the above
}

// Test files, internal (package x) and external (package x_test) alike,
// may import what their package may import, the package itself, the test
// helpers, and the package's testExtra: inputs a test needs that the
// package's code does not (sim's tests drive it with real traces). An
// external test gets nothing more by being external: a test that needs a
// package built on top of x belongs to that package (or to cmd), so x's
// tests keep to x's layer. An extra must not reach x through the table,
// which would make x's tests depend on its own users.
var testExtra = map[string][]string{
	"sim":          {"trace", "workload"},
	"cluster":      {"trace", "workload"},    // as sim
	"hw/hostmem":   {"hw/payload"},           // stores are checked with the replay's payloads
	"core/sched":   {"policy"},               // an LRU for the core it drives by hand
	"hw/live":      {"hw/hostmem", "policy"}, // memory stores and an LRU under the live body
	"hw/remote":    {"hw/payload"},
	"hw/rdmastore": {"hw/payload"},
}

// testHelpers are packages only test files may import (skip-or-fail,
// shared data paths, golden files); each also needs its row in allowed.
var testHelpers = []string{"internal/testenv", "internal/golden", "internal/coretest", "hw/internal/hwtest", "hw/remote/remotetest", "hw/rdma/rdmatest", "hw/store/storetest"}

// pkgRow gives the row of allowed that governs directory dir.
func pkgRow(dir string) (string, bool) {
	if dir == "cmd" || strings.HasPrefix(dir, "cmd/") {
		return "cmd", true
	}
	_, ok := allowed[dir]
	return dir, ok
}

// admits reports whether a row's entries admit project package dep.
func admits(entries []string, dep string) bool {
	for _, e := range entries {
		if dep == e || strings.HasPrefix(dep, e+"/") {
			return true
		}
	}
	return false
}

// reaches reports whether from may import to, directly or through others.
func reaches(from, to string, seen map[string]bool) bool {
	if seen[from] {
		return false
	}
	seen[from] = true
	for _, e := range allowed[from] {
		if e == to || strings.HasPrefix(to, e+"/") || reaches(e, to, seen) {
			return true
		}
	}
	return false
}

// goFiles calls fn for every Go file in the module outside the root,
// with its package directory.
func goFiles(t *testing.T, fn func(path, dir string)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "." {
			return nil // the module root holds this test only
		}
		fn(path, dir)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLayering(t *testing.T) {
	for pkg, extras := range testExtra {
		for _, e := range extras {
			if e == pkg || reaches(e, pkg, map[string]bool{}) {
				t.Errorf("testExtra: %s's tests may not import %s: it is built on %s", pkg, e, pkg)
			}
		}
	}
	fset := token.NewFileSet()
	goFiles(t, func(path, dir string) {
		pkg, known := pkgRow(dir)
		if !known {
			t.Errorf("%s: package %s is not in layering_test.go's list: place it in the layers", path, dir)
			return
		}
		if pkg == "cmd" {
			return // the leaf may import anything
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Error(err)
			return
		}
		// A test helper is test code too: it may build on the others.
		test := strings.HasSuffix(path, "_test.go") || slices.Contains(testHelpers, pkg)
		ok := allowed[pkg]
		if test {
			ok = slices.Concat([]string{pkg}, ok, testExtra[pkg], testHelpers)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.HasPrefix(p, "kvsim/"):
				dep := strings.TrimPrefix(p, "kvsim/")
				if dep == pkg || admits(ok, dep) {
					continue
				}
				if !test && admits(testHelpers, dep) {
					t.Errorf("%s imports %s: only test files may import the test helpers", path, p)
				} else {
					t.Errorf("%s imports %s: %s may only import %v of kvsim", path, p, dir, ok)
				}
			case (pkg == "policy" || pkg == "param") && strings.Contains(strings.Split(p, "/")[0], "."):
				t.Errorf("%s imports %s: %s is standard library only", path, p, pkg)
			}
		}
	})
}

// printers are the names by which code reaches the process's output or
// ends it; only cmd may use them. Everything else returns values and
// errors, or writes to an io.Writer or calls a log func its caller gives.
var printers = map[string][]string{
	"fmt":      {"Print", "Printf", "Println"},
	"os":       {"Exit", "Stdout", "Stderr"},
	"syscall":  {"Exit"},
	"log":      {"Print", "Printf", "Println", "Fatal", "Fatalf", "Fatalln", "Panic", "Panicf", "Panicln", "Output", "Default", "Writer", "SetOutput"},
	"log/slog": {"Debug", "DebugContext", "Info", "InfoContext", "Warn", "WarnContext", "Error", "ErrorContext", "Log", "LogAttrs", "Default", "SetDefault"},
}

// stillPrints lists what a package outside cmd may still use from
// printers, until it takes a log func from its caller. Empty: hw's parts
// take theirs from the program (SetLogf).
var stillPrints = map[string][]string{}

func TestOnlyCmdPrints(t *testing.T) {
	fset := token.NewFileSet()
	goFiles(t, func(path, dir string) {
		if dir == "cmd" || strings.HasPrefix(dir, "cmd/") || strings.HasSuffix(path, "_test.go") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Error(err)
			return
		}
		local := map[string]string{} // file's name for an import -> its path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if _, ok := printers[p]; !ok {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if name == "." {
				t.Errorf("%s: dot-imports %s, which hides its printers from this test", path, p)
			}
			local[name] = p
		}
		top := strings.Split(dir, "/")[0]
		ast.Inspect(f, func(n ast.Node) bool {
			var use string
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				if !ok || x.Obj != nil { // a local variable, not the package
					return true
				}
				p, ok := local[x.Name]
				if !ok || !slices.Contains(printers[p], n.Sel.Name) {
					return true
				}
				use = x.Name + "." + n.Sel.Name
				if q := p[strings.LastIndex(p, "/")+1:]; q != x.Name {
					use = q + "." + n.Sel.Name
				}
			case *ast.CallExpr:
				id, ok := n.Fun.(*ast.Ident)
				if !ok || id.Obj != nil || (id.Name != "print" && id.Name != "println") {
					return true
				}
				use = id.Name
			default:
				return true
			}
			if slices.Contains(stillPrints[top], use) {
				return true
			}
			t.Errorf("%s: %s uses %s: only cmd prints or exits; return the text or take an io.Writer or log func", fset.Position(n.Pos()), dir, use)
			return true
		})
	})
}

// TestReadmeLayout: the README's layout section has one line per package
// (and per other top-level folder), and names nothing that is gone.
func TestReadmeLayout(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Layout\n")
	_, block, ok2 := strings.Cut(sec, "```\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md: no ## Layout section with a ``` block")
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(block, "\n") {
		if l == "" || l[0] == ' ' { // a description's continuation
			continue
		}
		name := strings.TrimSuffix(strings.Fields(l)[0], "/")
		if listed[name] {
			t.Errorf("README.md layout: %s listed twice", name)
		}
		listed[name] = true
		if fi, err := os.Stat(name); err != nil || !fi.IsDir() {
			t.Errorf("README.md layout: %s is not a folder of the module", name)
		}
	}
	pkgs := map[string]bool{}
	goFiles(t, func(path, dir string) { pkgs[dir] = true })
	for dir := range pkgs {
		if !listed[dir] {
			t.Errorf("README.md layout: package %s has no line of its own", dir)
		}
	}
	tops, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	holds := map[string]bool{} // top-level folders holding packages
	for dir := range pkgs {
		holds[strings.Split(dir, "/")[0]] = true
	}
	// Folders git ignores (node_modules from the tests' npm install, out/)
	// are not the project's.
	ignored := map[string]bool{}
	if gi, err := os.ReadFile(".gitignore"); err == nil {
		for _, l := range strings.Split(string(gi), "\n") {
			ignored[strings.Trim(strings.TrimSpace(l), "/")] = true
		}
	}
	for _, d := range tops {
		if n := d.Name(); d.IsDir() && !strings.HasPrefix(n, ".") && !listed[n] && !holds[n] && !ignored[n] {
			t.Errorf("README.md layout: top-level folder %s is not listed", n)
		}
	}
}

// TestSimulationLinksNoDevice: a Go program that only simulates (experiment,
// cluster, validate) links no device library: no Redis client, GPU loader,
// verbs path or real store (go list -deps).
func TestSimulationLinksNoDevice(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./experiment", "./cluster", "./validate").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "kvsim/hw" || strings.HasPrefix(dep, "kvsim/hw/") || strings.HasPrefix(dep, "github.com/redis/") || dep == "kvsim/hwrun" {
			t.Errorf("a simulation-only package links %s", dep)
		}
	}
}

// TestOneScheduler: the batched engine's step scheduler is one package,
// beside the core, that both bodies run: the simulator times its steps in
// virtual time, the live body waits them out on its clock. Neither body
// may schedule steps of its own (core/sched is the only package with a
// Next over steps: it is checked here by its users importing it).
func TestOneScheduler(t *testing.T) {
	users := map[string]bool{"sim": false, "hw/live": false}
	fset := token.NewFileSet()
	goFiles(t, func(path, dir string) {
		if _, ok := users[dir]; !ok || strings.HasSuffix(path, "_test.go") {
			return
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "kvsim/core/sched" {
				users[dir] = true
			}
		}
	})
	for dir, ok := range users {
		if !ok {
			t.Errorf("%s does not run core/sched: the two bodies must share the step scheduler", dir)
		}
	}
}
