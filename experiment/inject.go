package experiment

import (
	"context"
	"io"

	"kvsim/scenario"
	"kvsim/trace"
	"kvsim/workload"
)

// RequestSource adapts rd to the core with the scenario's [workload.inject], if
// any: every pass gets its own injector, so every policy (and an offline
// policy's future) sees the same ids.
func RequestSource(sc *scenario.Scenario, rd *trace.Reader, opt trace.Options) (*workload.Source, error) {
	src := workload.NewSource(rd, trace.NewDict())
	if c := sc.Workload.Inject; c != nil {
		in, err := workload.NewInjector(workload.Inject(*c), sc.Seed, opt.BlockTokens)
		if err != nil {
			return nil, BadInputf("%s: workload.inject: %v", sc.Path, err)
		}
		src.Inject(in)
	}
	return src, nil
}

// ProfileTrace reads the scenario's trace once, as a run reads it (format,
// limit, speedup, injection), without simulating: what kvsim run says of
// the trace before it simulates.
func ProfileTrace(ctx context.Context, sc *scenario.Scenario, opt trace.Options) (*workload.Profile, error) {
	rd, err := OpenTrace(ctx, sc, opt)
	if err != nil {
		return nil, TraceError(sc, err)
	}
	defer rd.Close()
	var in *workload.Injector
	if c := sc.Workload.Inject; c != nil {
		if in, err = workload.NewInjector(workload.Inject(*c), sc.Seed, opt.BlockTokens); err != nil {
			return nil, BadInputf("%s: workload.inject: %v", sc.Path, err)
		}
	}
	p := workload.NewProfile()
	var q trace.Request
	for n := 0; ; n++ {
		if n&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		err := rd.Next(&q)
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return nil, TraceError(sc, err)
		}
		if in != nil {
			in.Apply(&q)
		}
		p.Add(&q)
	}
}
