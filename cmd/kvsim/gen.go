package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"kvsim/experiment"
	"kvsim/internal/atomicfile"
	"kvsim/results"
	"kvsim/trace"
)

// runGen writes a synthetic Mooncake-format trace (kvsim gen).
func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := trace.DefaultGenConfig()
	fs := newFlags("gen", "kvsim gen [--seed N] [--requests N] [--rate R] [--turns T] [--system-tokens N] [--format mooncake|azure] [--shape chat|shared-prefix|agentic [--groups N] [--users N] [--question-tokens N] [--output-tokens N] [--stages R1xS1,...] [--sessions N] [--depth D] [--fanout F] [--tool-wait S] [--tool-wait-spread L] [--tool-tokens N]] [--out FILE [--force]]", stderr)
	format := fs.String("format", "mooncake", "`FORMAT` of the lines: mooncake (JSONL with block ids) or azure (the Azure trace's CSV: times and lengths, no ids)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "random seed; the same flags always give the same bytes")
	fs.IntVar(&c.Requests, "requests", c.Requests, "number of requests (lines)")
	fs.Float64Var(&c.RatePerSec, "rate", c.RatePerSec, "new conversations per second (Poisson)")
	fs.Float64Var(&c.MeanTurns, "turns", c.MeanTurns, "mean turns per conversation (geometric)")
	fs.IntVar(&c.SystemPromptTokens, "system-tokens", c.SystemPromptTokens, "system prompt tokens shared by every request")
	shape := fs.String("shape", "chat", "`SHAPE` of the workload: chat (multi-turn conversations), shared-prefix (customers' shared prompts, users' fixed questions) or agentic (sessions of calls with tool waits and branches); the last two mooncake only")
	sp := trace.SharedPrefixConfig{BlockTokens: trace.DefaultBlockTokens, Groups: 150, Users: 5, QuestionTokens: 1200, OutputTokens: 1000}
	fs.IntVar(&sp.Groups, "groups", sp.Groups, "shared-prefix: customers, each with its own system prompt")
	fs.IntVar(&sp.Users, "users", sp.Users, "shared-prefix: users per customer, each with a fixed question")
	fs.IntVar(&sp.QuestionTokens, "question-tokens", sp.QuestionTokens, "tokens of each user's question (shared-prefix) or of a session's task (agentic: 1000 unless given)")
	fs.IntVar(&sp.OutputTokens, "output-tokens", sp.OutputTokens, "output tokens of every request (shared-prefix) or call (agentic: 200 unless given)")
	ag := trace.AgenticConfig{BlockTokens: trace.DefaultBlockTokens, Sessions: 200, RatePerSec: 1, Depth: 3, Fanout: 2,
		TaskTokens: 1000, ToolTokens: 500, OutputTokens: 200, ToolWaitSec: 5}
	fs.IntVar(&ag.Sessions, "sessions", ag.Sessions, "agentic: sessions (each a tree of calls)")
	fs.IntVar(&ag.Depth, "depth", ag.Depth, "agentic: calls below a session's first, along each path")
	fs.IntVar(&ag.Fanout, "fanout", ag.Fanout, "agentic: calls following each call above the last depth (1: a chain; more: branches)")
	fs.Float64Var(&ag.ToolWaitSec, "tool-wait", ag.ToolWaitSec, "agentic: mean tool wait before a following call, in seconds (exponential)")
	fs.IntVar(&ag.ToolTokens, "tool-tokens", ag.ToolTokens, "agentic: tokens of each tool result added to the context")
	fs.Float64Var(&ag.ToolWaitSpread, "tool-wait-spread", 0, "agentic: log-sd of each session's own mean tool wait (lognormal factor of mean 1 on --tool-wait); 0: sessions alike")
	stages := fs.String("stages", "15x50", "shared-prefix: Poisson `RATExSECONDS` stages, comma-separated")
	out := fs.String("out", "", "output file (default stdout); written whole or not at all")
	force := fs.Bool("force", false, "replace --out if it exists (a trace cannot be told to be kvsim's)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInputf("gen: unexpected argument %q", pos[0])
	}
	if err := c.Validate(); err != nil {
		return badInputf("gen: %v", err)
	}
	generate := trace.Generate
	switch *shape {
	case "chat":
	case "shared-prefix":
		if *format != "mooncake" {
			return badInputf("gen: --shape shared-prefix writes mooncake only")
		}
		st, err := trace.ParseStages(*stages)
		if err != nil {
			return badInputf("gen: --stages: %v", err)
		}
		sp.Seed, sp.SystemTokens, sp.Stages = c.Seed, c.SystemPromptTokens, st
		if err := sp.Validate(); err != nil {
			return badInputf("gen: %v", err)
		}
		generate = func(w io.Writer, _ trace.GenConfig) error { return trace.GenerateSharedPrefix(w, sp) }
	case "agentic":
		if *format != "mooncake" {
			return badInputf("gen: --shape agentic writes mooncake only")
		}
		ag.Seed, ag.SystemTokens, ag.RatePerSec = c.Seed, c.SystemPromptTokens, c.RatePerSec
		fs.Visit(func(f *flag.Flag) { // the shared length flags, where given
			switch f.Name {
			case "question-tokens":
				ag.TaskTokens = sp.QuestionTokens
			case "output-tokens":
				ag.OutputTokens = sp.OutputTokens
			}
		})
		if err := ag.Validate(); err != nil {
			return badInputf("gen: %v", err)
		}
		generate = func(w io.Writer, _ trace.GenConfig) error { return trace.GenerateAgentic(w, ag) }
	default:
		return badInputf("gen: --shape: %q is not chat, shared-prefix or agentic", *shape)
	}
	switch *format {
	case "mooncake":
	case "azure":
		generate = trace.GenerateAzure
	default:
		return badInputf("gen: --format: %q is not mooncake or azure", *format)
	}
	if *out != "" && *out != "-" {
		if err := checkOutFile("gen: --out", *out); err != nil {
			return err
		}
		if ok, _ := results.Replaceable(*out, func(string) bool { return *force }); !ok {
			return badInputf("gen: --out %s: exists; kvsim cannot tell a trace it wrote from another: pass --force to replace it, or give another file", *out)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The generator fails on its own only when the flags ask for arrivals
	// past the simulated-time limit (a --rate so low that conversations
	// start centuries apart): bad input, told apart from a failed write.
	gen := func(w io.Writer) error {
		ew := &errWriter{w: w, ctx: ctx}
		err := generate(ew, c)
		if err != nil && ew.err == nil {
			return badInputf("gen: --rate %g: %v", c.RatePerSec, err)
		}
		return err
	}
	if *out == "" || *out == "-" {
		w := bufio.NewWriter(stdout)
		if err := gen(w); err != nil {
			if errors.As(err, new(*inputError)) {
				return err
			}
			return fmt.Errorf("gen: %w", err)
		}
		return w.Flush()
	}
	return writeAtomic(*out, gen)
}

// errWriter records the first error of the writer it wraps; once ctx
// is cancelled it fails every write, which ends the generator.
type errWriter struct {
	w   io.Writer
	ctx context.Context
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if err := e.ctx.Err(); err != nil {
		if e.err == nil {
			e.err = err
		}
		return 0, err
	}
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// writeAtomic writes path through a temporary file in the same directory and
// renames it into place, so a failure never leaves a half-written trace.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return badInputf("gen: --out %s: %v", path, experiment.PathErr(err))
	}
	if err := write(f); err != nil {
		atomicfile.Discard(f)
		if errors.As(err, new(*inputError)) {
			return err
		}
		return fmt.Errorf("gen: write %s: %w", path, experiment.PathErr(err))
	}
	if err := atomicfile.Commit(f, path); err != nil {
		return fmt.Errorf("gen: write %s: %w", path, experiment.PathErr(err))
	}
	return nil
}
