package experiment

import (
	"context"

	"kvsim/scenario"
	"kvsim/trace"
)

// SpoolTrace makes the trace at path readable as often as a run reads it
// (trace.Spool): a pipe, /dev/stdin or a device is copied once into a
// temporary file, which release removes. Its errors are bad input,
// "PATH: reason" (or an open's *PathError), but ctx's own.
func SpoolTrace(ctx context.Context, path string) (release func(), err error) {
	release, err = trace.Spool(ctx, path)
	if err != nil && ctx.Err() == nil {
		return nil, BadInput(err)
	}
	return release, err
}

// SpoolScenarios is SpoolTrace for each scenario's trace file (a generated
// trace has none); release lets go of them all.
func SpoolScenarios(ctx context.Context, scs ...*scenario.Scenario) (release func(), err error) {
	var rels []func()
	release = func() {
		for _, r := range rels {
			r()
		}
	}
	for _, sc := range scs {
		if sc.Workload.Gen != nil {
			continue
		}
		r, err := trace.Spool(ctx, sc.Workload.Trace)
		if err != nil {
			release()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, BadInputf("%s: workload: trace: %v", sc.Path, err)
		}
		rels = append(rels, r)
	}
	return release, nil
}
