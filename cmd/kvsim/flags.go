package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// newFlags returns a FlagSet that reports errors instead of exiting. -h
// prints "usage: " + usage and the flags; errors come back as one line.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kvsim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: "+usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses flags that may appear before or after positional
// arguments (kvsim run a.toml --out x) and returns the positional ones.
// errHelp is returned as-is so callers can exit 0 after -h.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	out := fs.Output()
	fs.SetOutput(io.Discard) // the error comes back as one line instead
	defer fs.SetOutput(out)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(out)
				fs.Usage()
				return nil, err
			}
			return nil, badInput(fmt.Errorf("%s: %w", strings.TrimPrefix(fs.Name(), "kvsim "), err))
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// sortedKeys returns a map's keys in order (deterministic output).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setFlags collects repeated --set KEY=VALUE overrides.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// addSetFlag registers --set on a command that loads scenarios.
func addSetFlag(fs *flag.FlagSet, s *setFlags) {
	fs.Var(s, "set", "override a scenario value, `KEY=VALUE` (repeatable): seed=2, gpu.prefill_tokens_per_s=2e5,\n"+
		"tier.NAME.KEY (tier.ssd.shared_bandwidth=false), link.FROM-TO.KEY, policy.NAME.KEY")
}

// addWaitFlag registers --wait on a command that writes results folders.
func addWaitFlag(fs *flag.FlagSet, wait *bool) {
	fs.BoolVar(wait, "wait", false, "if another kvsim is writing a results folder this one writes, wait for it (default: fail at once, exit 2)")
}
