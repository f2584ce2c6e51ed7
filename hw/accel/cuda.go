package accel

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
)

// debianMultiarch is Debian's library folder name for this machine.
func debianMultiarch() string {
	if runtime.GOARCH == "arm64" {
		return "aarch64-linux-gnu"
	}
	return "x86_64-linux-gnu"
}

// pyLibRoots are the folders pip installs packages into, in search order:
// the active virtualenv and conda env, virtualenvs under /opt (the lent
// H200 image keeps torch's in /opt/torch/.venv), the user's, the system's.
func pyLibRoots(env func(string) string) []string {
	var roots []string
	for _, r := range []string{env("VIRTUAL_ENV"), env("CONDA_PREFIX")} {
		if r != "" {
			roots = append(roots, r+"/lib/python3*/site-packages")
		}
	}
	roots = append(roots, "/opt/*/lib/python3*/site-packages", "/opt/*/*/lib/python3*/site-packages")
	if h := env("HOME"); h != "" {
		roots = append(roots, h+"/.local/lib/python3*/site-packages")
	}
	return append(roots, "/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages", "/usr/lib/python3/dist-packages")
}

// cudartSearch lists where libcudart may be, in the order OpenDevice tries:
// paths, loader names (no slash) and glob patterns.
func cudartSearch(env func(string) string) []string {
	var s []string
	if p := env("KVSIM_CUDART"); p != "" {
		s = append(s, p)
	}
	names := []string{"libcudart.so.13", "libcudart.so.12", "libcudart.so"}
	s = append(s, names...)
	dirs := []string{}
	if h := env("CUDA_HOME"); h != "" {
		dirs = append(dirs, h+"/lib64")
	}
	if h := env("CUDA_PATH"); h != "" {
		dirs = append(dirs, h+"/lib64")
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	for _, d := range dirs {
		for _, n := range names {
			s = append(s, d+"/"+n)
		}
	}
	for _, r := range pyLibRoots(env) {
		s = append(s, r+"/nvidia/cu13/lib/libcudart.so.13", r+"/nvidia/cuda_runtime/lib/libcudart.so.12")
	}
	if c := env("CONDA_PREFIX"); c != "" {
		s = append(s, c+"/lib/libcudart.so.13", c+"/lib/libcudart.so.12")
	}
	for _, n := range names {
		s = append(s, "/usr/lib/"+debianMultiarch()+"/"+n)
	}
	return s
}

// hipSearch is cudartSearch for libamdhip64.
func hipSearch(env func(string) string) []string {
	var s []string
	if p := env("KVSIM_HIP"); p != "" {
		s = append(s, p)
	}
	names := []string{"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"}
	s = append(s, names...)
	dirs := []string{}
	if r := env("ROCM_PATH"); r != "" {
		dirs = append(dirs, r+"/lib")
	}
	dirs = append(dirs, "/opt/rocm/lib", "/opt/rocm-*/lib")
	for _, d := range dirs {
		s = append(s, d+"/libamdhip64.so")
	}
	for _, r := range pyLibRoots(env) {
		s = append(s, r+"/_rocm_sdk_core/lib/libamdhip64.so", r+"/torch/lib/libamdhip64.so")
	}
	return append(s, "/usr/lib/"+debianMultiarch()+"/libamdhip64.so.6", "/usr/lib/"+debianMultiarch()+"/libamdhip64.so.5")
}

// expandSearch turns a search list into tries: loader names stay, patterns
// expand, a file reached twice (links) is kept once, and misses carry
// their reason so the probe shows every place looked. Tries with Err ""
// are the ones to dlopen, in order.
func expandSearch(backend string, search []string) []ProbeTry {
	var tries []ProbeTry
	seen := map[string]bool{}
	for _, p := range search {
		if !strings.Contains(p, "/") {
			tries = append(tries, ProbeTry{Backend: backend, Path: p})
			continue
		}
		matches := []string{p}
		if strings.ContainsAny(p, "*?[") {
			if matches, _ = filepath.Glob(p); len(matches) == 0 {
				tries = append(tries, ProbeTry{Backend: backend, Path: p, Err: "not found"})
				continue
			}
		}
		for _, m := range matches {
			real, err := filepath.EvalSymlinks(m)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				tries = append(tries, ProbeTry{Backend: backend, Path: m, Err: "not found"})
			case err != nil:
				tries = append(tries, ProbeTry{Backend: backend, Path: m, Err: err.Error()})
			case !seen[real]:
				seen[real] = true
				tries = append(tries, ProbeTry{Backend: backend, Path: m})
			}
		}
	}
	return tries
}
