//go:build linux

package accel

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

func rootPath(root, p string) string { return filepath.Join(root, p) }

// FindCUDARuntime lists libcudart.so.* files, most preferred first:
// $KVSIM_CUDART, the loader's paths ($LD_LIBRARY_PATH, /etc/ld.so.conf,
// the system directories), $CUDA_HOME/lib64, /usr/local/cuda/lib64, then
// pip wheel layouts (nvidia/cu13/lib for CUDA 13, nvidia/cuda_runtime/lib
// for CUDA 12) under $VIRTUAL_ENV, $CONDA_PREFIX and /opt/*. It only looks:
// nothing is loaded.
func FindCUDARuntime() []string { return FindCUDARuntimeIn("") }

// FindCUDARuntimeIn is FindCUDARuntime over a file tree rooted at root
// (doctor's tests use a fake one); OpenDevice's own tries are added only
// for the real root.
func FindCUDARuntimeIn(root string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	glob := func(dir string) {
		m, _ := filepath.Glob(filepath.Join(dir, "libcudart.so.*"))
		slices.SortFunc(m, func(a, b string) int { return strings.Compare(b, a) }) // newest major first
		for _, p := range m {
			add(p)
		}
	}
	if p := os.Getenv("KVSIM_CUDART"); p != "" {
		add(p)
	}
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			glob(d)
		}
	}
	for _, d := range ldConfDirs(root, rootPath(root, "/etc/ld.so.conf"), 0) {
		glob(d)
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	for _, d := range []string{"/lib/" + arch + "-linux-gnu", "/usr/lib/" + arch + "-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
		glob(rootPath(root, d))
	}
	if h := os.Getenv("CUDA_HOME"); h != "" {
		glob(filepath.Join(h, "lib64"))
	}
	glob(rootPath(root, "/usr/local/cuda/lib64"))
	var prefixes []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			prefixes = append(prefixes, p)
		}
	}
	opt, _ := filepath.Glob(rootPath(root, "/opt/*"))
	prefixes = append(prefixes, opt...)
	prefixes = append(prefixes, rootPath(root, "/usr/local"), rootPath(root, "/usr"))
	for _, pre := range prefixes {
		sites, _ := filepath.Glob(filepath.Join(pre, "lib", "python3*", "*-packages"))
		for _, s := range sites {
			glob(filepath.Join(s, "nvidia", "cu13", "lib"))
			glob(filepath.Join(s, "nvidia", "cuda_runtime", "lib"))
		}
	}
	// And every file OpenDevice would try (it tries these too), so doctor
	// and replay never disagree about what is installed.
	if root == "" {
		for _, t := range expandSearch("cuda", cudartSearch(os.Getenv)) {
			if t.Err == "" && strings.Contains(t.Path, "/") {
				add(t.Path)
			}
		}
	}
	return out
}

// ldConfDirs reads the directories of an ld.so.conf, following include.
func ldConfDirs(root, file string, depth int) []string {
	f, err := os.Open(file)
	if err != nil || depth > 4 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.TrimSpace(line)
		if inc, ok := strings.CutPrefix(line, "include "); ok {
			pat := strings.TrimSpace(inc)
			if !filepath.IsAbs(pat) {
				pat = filepath.Join(filepath.Dir(file), pat)
			} else {
				pat = rootPath(root, pat)
			}
			m, _ := filepath.Glob(pat)
			for _, inc := range m {
				dirs = append(dirs, ldConfDirs(root, inc, depth+1)...)
			}
		} else if strings.HasPrefix(line, "/") {
			dirs = append(dirs, rootPath(root, line))
		}
	}
	return dirs
}
