package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenReproducesSharedPrefixTrace: the command traces/README.md gives
// rewrites traces/llmd_shared_prefix.jsonl byte for byte.
func TestGenReproducesSharedPrefixTrace(t *testing.T) {
	const stages = "15x50,3x20,10x20,15x20,20x38,22x34,25x30,30x25,35x21,40x38,43x36,46x33,49x30,52x29,55x27,57x26,60x25"
	doc, err := os.ReadFile("../../traces/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "--shape shared-prefix --system-tokens 6000 \\\n  --stages "+stages+" \\\n  --out traces/llmd_shared_prefix.jsonl") {
		t.Fatal("traces/README.md no longer gives the command this test runs")
	}
	out := filepath.Join(t.TempDir(), "t.jsonl")
	args := []string{"--shape", "shared-prefix", "--system-tokens", "6000", "--stages", stages, "--out", out}
	if err := runGen(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile("../../traces/llmd_shared_prefix.jsonl")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the documented command does not reproduce traces/llmd_shared_prefix.jsonl (%v)", err)
	}
}

// TestGenReproducesAgenticTrace: the command traces/README.md gives
// rewrites traces/agentic.jsonl byte for byte.
func TestGenReproducesAgenticTrace(t *testing.T) {
	const flags = "--shape agentic --seed 1 --sessions 300 --rate 1 --depth 8 --fanout 1 \\\n  --tool-wait 10 --question-tokens 4000 --tool-tokens 1500 --output-tokens 200 \\\n  --out traces/agentic.jsonl"
	doc, err := os.ReadFile("../../traces/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), flags) {
		t.Fatal("traces/README.md no longer gives the command this test runs")
	}
	out := filepath.Join(t.TempDir(), "t.jsonl")
	args := append(strings.Fields(strings.ReplaceAll(strings.TrimSuffix(flags, "traces/agentic.jsonl"), "\\", "")), out)
	if err := runGen(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want, err := os.ReadFile("../../traces/agentic.jsonl")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the documented command does not reproduce traces/agentic.jsonl (%v)", err)
	}
}

func TestGenShapeErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--shape", "dag"},
		{"--shape", "agentic", "--format", "azure"},
		{"--shape", "shared-prefix", "--format", "azure"},
		{"--shape", "shared-prefix", "--stages", "3"},
		{"--shape", "agentic", "--fanout", "0"},
		{"--shape", "agentic", "--depth", "40", "--fanout", "2"},
		{"--shape", "agentic", "--tool-wait-spread", "-1"},
	} {
		if err := runGen(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	var out bytes.Buffer
	args := []string{"--shape", "agentic", "--sessions", "1", "--depth", "1", "--fanout", "3", "--output-tokens", "9"}
	if err := runGen(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 4 || strings.Count(out.String(), `"parent_call_id": 0,`) != 3 ||
		strings.Count(out.String(), `"output_length": 9,`) != 4 {
		t.Fatalf("1 session of depth 1, fan-out 3: %d lines\n%s", n, out.String())
	}
}
