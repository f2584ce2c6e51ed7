package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kvsim/trace"
)

func convertCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	err := runTraceConvert(context.Background(), args, &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// TestTraceConvert: mrc on a converted trace prints what it prints on the
// source, for a JSONL and a Bailian trace.
func TestTraceConvert(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		src    string
		format []string
		bt     string
	}{
		{"../../traces/synthetic.jsonl", nil, "512"},
		{"../../trace/testdata/bailian_tiny.jsonl", []string{"--format", "bailian"}, "16"},
		{"../../trace/testdata/bailian_tiny.jsonl", []string{"--format", "bailian"}, "32"},
	} {
		bin := filepath.Join(dir, filepath.Base(c.src)+".kvtc")
		os.Remove(bin)
		out, errs, code := convertCLI(append(append([]string{}, c.format...), c.src, bin)...)
		if code != 0 || !strings.Contains(out, "bytes ->") {
			t.Fatalf("convert %s: exit %d %s %s", c.src, code, out, errs)
		}
		mrcArgs := []string{"--policies", "lru,fifo", "--sizes", "1,2,50%", "--block-tokens", c.bt}
		want, errs, code := mrcCLI(append(append([]string{"--trace", c.src}, c.format...), mrcArgs...)...)
		if code != 0 {
			t.Fatalf("mrc %s: %s", c.src, errs)
		}
		got, errs, code := mrcCLI(append([]string{"--trace", bin}, mrcArgs...)...)
		if code != 0 {
			t.Fatalf("mrc %s: %s", bin, errs)
		}
		// The first line names the file.
		cut := func(s string) string { return s[strings.Index(s, ":"):] }
		if cut(got) != cut(want) {
			t.Errorf("%s: binary:\n%s\nsource:\n%s", c.src, got, want)
		}
	}
}

func TestTraceConvertBadInput(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("mine\n"), 0o644)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n{]\n"), 0o644)
	src := "../../trace/testdata/gen_tiny.jsonl"
	kvtc := filepath.Join(dir, "x.kvtc")
	if _, errs, code := convertCLI(src, kvtc); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{src}, "want IN and OUT, got 1 argument(s)"},
		{[]string{"--format", "csv", src, filepath.Join(dir, "y")}, `--format: unknown trace format "csv" (known: ` + strings.Join(trace.Formats(), ", ") + ")"},
		{[]string{src, notes}, "notes.txt exists and is not a binary trace: not replaced"},
		{[]string{"--force", src, notes}, "notes.txt exists and is not a binary trace: not replaced"},
		{[]string{src, kvtc}, "x.kvtc exists (--force replaces a binary trace)"},
		{[]string{bad, filepath.Join(dir, "b.kvtc")}, "bad.jsonl:2: invalid JSON"},
		{[]string{filepath.Join(dir, "none.jsonl"), filepath.Join(dir, "c.kvtc")}, "none.jsonl: no such file"},
		{[]string{"--format", "azure", src, filepath.Join(dir, "d.kvtc")}, `gen_tiny.jsonl:1: azure trace: no column "TIMESTAMP"`},
	} {
		_, errs, code := convertCLI(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}
	if b, _ := os.ReadFile(notes); string(b) != "mine\n" {
		t.Errorf("replaced a file kvsim did not write")
	}
	for _, f := range []string{"b.kvtc", "c.kvtc", "d.kvtc"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("a failed conversion wrote %s", f)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("left behind: %v", ents)
	}
	if _, errs, code := convertCLI("--force", src, kvtc); code != 0 {
		t.Errorf("--force: %s", errs)
	}

	// OUT a named pipe (reading it to check its magic blocked for ever), a
	// link to a binary trace (replaced by the rename), in a missing folder
	// (named the temporary file): exit 2 naming OUT, nothing written.
	other := t.TempDir()
	fifo, link, missing := filepath.Join(other, "p.kvtc"), filepath.Join(other, "l.kvtc"), filepath.Join(other, "no", "x.kvtc")
	mkfifo(t, fifo)
	if err := os.Symlink(kvtc, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{fifo, fifo + " exists and is not a regular file"},
		{link, link + " exists and is not a regular file"},
		{missing, missing + ": folder " + filepath.Dir(missing) + " does not exist"},
	} {
		done := make(chan struct{})
		var errs string
		var code int
		go func() {
			_, errs, code = convertCLI("--force", src, c.out)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: trace convert hung", c.out)
		}
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 || tempName.MatchString(errs) {
			t.Errorf("%s: exit %d %q, want 2 and %q", c.out, code, errs, c.want)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
}

// TestMrcFormats: --format and --block-tokens reach the reader.
func TestMrcFormats(t *testing.T) {
	fix := "../../trace/testdata/"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", fix + "bailian_tiny.jsonl", "--format", "bailian", "--block-tokens", "16"}, "4 requests, 11 references, 7 distinct blocks"},
		{[]string{"--trace", fix + "bailian_tiny.jsonl", "--format", "bailian", "--block-tokens", "32"}, "4 requests, 7 references, 6 distinct blocks"},
		{[]string{"--trace", fix + "mooncake_sessions.jsonl"}, "5 requests, 8 references, 5 distinct blocks"},
	} {
		out, errs, code := mrcCLI(append(c.args, "--policies", "lru", "--sizes", "1")...)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d %s%s, want %q", c.args, code, out, errs, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", fix + "azure_tiny.csv", "--format", "azure"}, "azure_tiny.csv holds no blocks"},
		{[]string{"--trace", fix + "burstgpt_tiny.csv", "--format", "burstgpt"}, "burstgpt_tiny.csv holds no blocks"},
		{[]string{"--trace", fix + "bailian_tiny.jsonl", "--format", "bailian", "--block-tokens", "20"}, "--block-tokens: want a positive number of tokens (a multiple of 16 for bailian), got 20"},
		{[]string{"--trace", fix + "azure_tiny.csv"}, "azure_tiny.csv:1: invalid JSON"},
	} {
		_, errs, code := mrcCLI(append(c.args, "--policies", "lru", "--sizes", "1")...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
