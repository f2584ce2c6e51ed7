package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// documentedGen returns the arguments after "gen" of the command that
// traces/README.md says produced traces/synthetic.jsonl.
func documentedGen(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../traces/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "go run ./cmd/kvsim gen"); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatal("traces/README.md has no 'go run ./cmd/kvsim gen' line")
	return nil
}

func TestGenReproducesShippedTrace(t *testing.T) {
	args := documentedGen(t)
	out := filepath.Join(t.TempDir(), "synthetic.jsonl")
	found := false
	for i := range args {
		if args[i] == "--out" && i+1 < len(args) {
			if args[i+1] != "traces/synthetic.jsonl" {
				t.Fatalf("documented command writes %s", args[i+1])
			}
			args[i+1], found = out, true
		}
	}
	if !found {
		t.Fatalf("documented command %q has no --out traces/synthetic.jsonl", args)
	}
	if err := runGen(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../traces/synthetic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("regenerating with the command in traces/README.md does not reproduce traces/synthetic.jsonl; " +
			"if the change is intended, rerun that command from the repository root")
	}
	if len(want) > 1_500_000 {
		t.Fatalf("traces/synthetic.jsonl is %d bytes, keep it under 1.5 MB", len(want))
	}
	// Nothing but the output is left behind.
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Fatalf("%d files in the output directory", len(ents))
	}
}

func TestGenStdout(t *testing.T) {
	var stdout bytes.Buffer
	if err := runGen(context.Background(), []string{"--requests", "3", "--seed", "5"}, &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], `{"timestamp": 0, "input_length": `) {
		t.Fatalf("got %q", stdout.String())
	}
}

func TestGenBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--requests", "-1"},
		{"--rate", "0"},
		{"--turns", "0.5"},
		{"--system-tokens", "-5"},
		{"--bogus"},
		{"extra"},
		{"--out", filepath.Join(dir, "no-such-dir", "x.jsonl")},
		// Conversations 1e300 s apart pass the simulated-time limit: found
		// while generating, to stdout or to --out (was exit 1).
		{"--rate", "1e-300", "--requests", "100"},
		{"--rate", "1e-300", "--requests", "100", "--out", filepath.Join(dir, "slow.jsonl")},
	} {
		err := runGen(context.Background(), args, io.Discard, io.Discard)
		var bi *inputError
		if !errors.As(err, &bi) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want a one-line bad-input error", args, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %d files behind", len(ents))
	}
	var help bytes.Buffer
	if err := runGen(context.Background(), []string{"-h"}, io.Discard, &help); !errors.Is(err, flag.ErrHelp) || !strings.Contains(help.String(), "usage: kvsim gen") {
		t.Fatalf("-h: %v %q", err, help.String())
	}
}

// A failed write leaves no file, not even a temporary one.
func TestGenAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.jsonl")
	err := writeAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "partial")
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("no error")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v behind", ents)
	}
}
