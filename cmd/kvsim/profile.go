package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"kvsim/experiment"
	"kvsim/internal/atomicfile"
	"kvsim/results"
)

// checkProfilePath checks a --cpuprofile or --memprofile path before any
// work: it can be written, is none of others (the run's inputs and other
// outputs), and holds nothing but a pprof profile.
func checkProfilePath(what, path string, others []role) error {
	if err := checkOutFile(what, path); err != nil {
		return err
	}
	if err := checkNotInput(what, path, others); err != nil {
		return err
	}
	return experiment.CheckReplace(what, path, results.IsPprof, "kvsim replaces only a pprof profile; move it or give another path")
}

// startProfiles starts a CPU profile and arranges a heap profile, for
// --cpuprofile and --memprofile (checked by checkProfilePath). Each is
// written to a temporary file beside its path, renamed into place by
// stop: a failed or killed run never leaves half a profile, nor truncates
// what was there.
func startProfiles(cpu, mem string) (stop func() error, err error) {
	var cf, mf *os.File
	discard := func() {
		for _, f := range []*os.File{cf, mf} {
			if f != nil {
				atomicfile.Discard(f)
			}
		}
	}
	temp := func(what, path string) (*os.File, error) {
		f, err := atomicfile.Create(path)
		if err != nil {
			return nil, badInputf("%s %s: %v", what, path, experiment.PathErr(err))
		}
		return f, nil
	}
	if cpu != "" {
		if cf, err = temp("run: --cpuprofile", cpu); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			discard()
			return nil, fmt.Errorf("run: --cpuprofile: %w", err)
		}
	}
	if mem != "" {
		if mf, err = temp("run: --memprofile", mem); err != nil {
			if cf != nil {
				pprof.StopCPUProfile()
			}
			discard()
			return nil, err
		}
	}
	// place closes f and renames it to path.
	place := func(what string, f *os.File, path string, werr error) error {
		if werr == nil {
			werr = atomicfile.Commit(f, path)
		} else {
			atomicfile.Discard(f)
		}
		if werr != nil {
			return fmt.Errorf("%s %s: %w", what, path, experiment.PathErr(werr))
		}
		return nil
	}
	return func() error {
		var err error
		if cf != nil {
			pprof.StopCPUProfile()
			err = place("run: --cpuprofile", cf, cpu, nil)
		}
		if mf != nil {
			runtime.GC() // up-to-date in-use figures
			if e := place("run: --memprofile", mf, mem, pprof.WriteHeapProfile(mf)); err == nil {
				err = e
			}
		}
		return err
	}, nil
}
