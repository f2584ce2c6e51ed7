package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles starts a CPU profile and arranges a heap profile, for
// --cpuprofile and --memprofile; stop writes and closes them. Both files
// are created up front so that a bad path fails before any simulation.
func startProfiles(cpu, mem string) (stop func(), err error) {
	var cf, mf *os.File
	if cpu != "" {
		if cf, err = os.Create(cpu); err != nil {
			return nil, badInputf("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	if mem != "" {
		if mf, err = os.Create(mem); err != nil {
			if cf != nil {
				pprof.StopCPUProfile()
				cf.Close()
			}
			return nil, badInputf("--memprofile: %v", err)
		}
	}
	return func() {
		if cf != nil {
			pprof.StopCPUProfile()
			cf.Close()
		}
		if mf != nil {
			runtime.GC() // up-to-date in-use figures
			pprof.WriteHeapProfile(mf)
			mf.Close()
		}
	}, nil
}
