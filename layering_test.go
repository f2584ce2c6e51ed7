package kvsim_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allowed lists, per package, the project packages it may import; policy
// may import nothing of ours and no third-party code at all. sim and hw
// never see each other: the core is the one brain, they are its bodies;
// experiment is the one place that wires them. Every package is listed: a
// new one fails the test until it is placed here.
var allowed = map[string][]string{
	"policy":   {},
	"core":     {"policy"},
	"trace":    {},
	"results":  {},
	"scenario": {"core", "policy", "trace", "results"},
	"workload": {"core", "policy", "trace"},
	"sim":      {"core", "policy"},
	"hw":       {"core", "policy", "hw/accel", "hw/bucket", "hw/hostmem", "hw/ioengine", "hw/payload", "hw/internal/hwtest"},
	// hw's parts, by device: each imports only the parts below it.
	"hw/ioengine":        {"hw/internal/sys", "hw/internal/hwtest"},
	"hw/payload":         {},
	"hw/hostmem":         {"hw/ioengine", "hw/internal/sys", "hw/internal/hwtest"},
	"hw/bucket":          {"hw/ioengine", "hw/hostmem", "hw/internal/sys", "hw/internal/hwtest"},
	"hw/accel":           {"hw/ioengine", "hw/hostmem", "hw/internal/hwtest"},
	"hw/doctor":          {"hw", "hw/accel", "hw/hostmem", "hw/ioengine", "hw/payload", "hw/internal/hwtest"},
	"hw/internal/sys":    {},
	"hw/internal/hwtest": {},
	"mrc":                {"policy", "trace"},
	"report":             {"results"},
	"experiment":         {"core", "policy", "trace", "results", "scenario", "workload", "sim", "hw", "hw/bucket"},
	"cmd":                nil, // the leaf: flags, printing and exit codes over all of the above
}

func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := layer(filepath.ToSlash(filepath.Dir(path)))
		if !strings.Contains(filepath.ToSlash(path), "/") {
			return nil // the module root holds this test only
		}
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("%s: package %s is not in layering_test.go's list: place it in the layers", path, pkg)
			return nil
		}
		if pkg == "cmd" {
			return nil // the leaf may import anything
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			switch {
			case strings.HasPrefix(p, "kvsim/"):
				dep := layer(strings.TrimPrefix(p, "kvsim/"))
				if dep != pkg && !contains(ok, dep) {
					t.Errorf("%s imports %s: %s may only import %v of kvsim", path, p, pkg, ok)
				}
			case pkg == "policy" && strings.Contains(strings.Split(p, "/")[0], "."):
				t.Errorf("%s imports %s: policy is standard library only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// layer is the entry of allowed a package directory falls under: its
// top-level directory, or the directory itself within hw, whose parts are
// layered among themselves.
func layer(dir string) string {
	if dir == "hw" || strings.HasPrefix(dir, "hw/") {
		return dir
	}
	return strings.Split(dir, "/")[0]
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
