package trace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fifoWith makes a named pipe that a writer feeds data once.
func fifoWith(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(p); err != nil {
		t.Skip(err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			f.Write(data)
			f.Close()
		}
	}()
	return p
}

// spoolTemps lists Spool's temporary copies in dir.
func spoolTemps(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "kvsim-trace-*"))
	return m
}

// TestSpoolPipe: a named pipe is read once into a copy that every open
// reads whole, under the pipe's name; the cache is never written beside
// the copy; release removes it.
func TestSpoolPipe(t *testing.T) {
	cacheEnv(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var b bytes.Buffer
	c := DefaultGenConfig()
	c.Requests = 300
	if err := Generate(&b, c); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(src, b.Bytes(), 0o644)
	want := dumpFile(t, src, Options{})
	p := fifoWith(t, b.Bytes())
	release, err := Spool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Spool(context.Background(), p) // a second scenario on the same pipe
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		got, bin := openDump(t, p, Options{})
		if got != strings.ReplaceAll(want, src, p) || bin {
			t.Fatalf("read %d: binary %v\n%s", i, bin, got)
		}
	}
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := readFileAll(f)
	if !bytes.Equal(whole, b.Bytes()) {
		t.Errorf("OpenFile: %d bytes, want %d", len(whole), b.Len())
	}
	temps := spoolTemps(t, tmp)
	if len(temps) != 1 {
		t.Fatalf("copies: %v", temps)
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "*.kvtc")); len(m) > 0 {
		t.Errorf("a cache beside the copy: %v", m)
	}
	release()
	release() // twice: once
	if len(spoolTemps(t, tmp)) != 1 {
		t.Error("the copy went while another Spool held it")
	}
	again()
	if m := spoolTemps(t, tmp); len(m) != 0 {
		t.Errorf("left behind: %v", m)
	}
	if release, err := Spool(context.Background(), src); err != nil || len(spoolTemps(t, tmp)) != 0 {
		t.Errorf("a regular file was copied: %v", err)
	} else {
		release()
	}
}

func readFileAll(f *os.File) ([]byte, error) {
	defer f.Close()
	var b bytes.Buffer
	_, err := b.ReadFrom(f)
	return b.Bytes(), err
}

// TestSpoolBinary: a binary trace through a pipe is read as one.
func TestSpoolBinary(t *testing.T) {
	bin := binaryOf(t, "testdata/mooncake_sessions.jsonl", "")
	data, _ := os.ReadFile(bin)
	p := fifoWith(t, data)
	release, err := Spool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	got, isBin := openDump(t, p, Options{})
	want := dumpFile(t, "testdata/mooncake_sessions.jsonl", Options{})
	if !isBin || got != strings.ReplaceAll(want, "testdata/mooncake_sessions.jsonl", p) {
		t.Errorf("binary %v:\n%s", isBin, got)
	}
}

// TestSpoolRefused: what cannot be a text trace stops the copy at once
// (an endless device included), one line naming the path, no copy left.
func TestSpoolRefused(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	long := bytes.Repeat([]byte("x"), MaxLineBytes+1)
	old := SpoolMaxBytes
	t.Cleanup(func() { SpoolMaxBytes = old })
	for _, c := range []struct {
		path func() string
		max  int64
		want string
	}{
		{func() string { return "/dev/zero" }, old, "not a text trace (a NUL byte at byte 0)"},
		{func() string { return "/dev/urandom" }, old, "not a text trace (a NUL byte"},
		{func() string { return fifoWith(t, []byte("{}\n\x00")) }, old, "a NUL byte at byte 3"},
		{func() string { return fifoWith(t, append([]byte("{}\n"), long...)) }, old, "line 2 is longer than"},
		{func() string { return fifoWith(t, []byte("{}\n{}\n")) }, 5, "more than 5 bytes through a pipe or device"},
	} {
		p := c.path()
		if _, err := os.Stat(p); err != nil {
			t.Skip(err)
		}
		SpoolMaxBytes = c.max
		_, err := Spool(context.Background(), p)
		if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", p, err, c.want)
		}
		if m := spoolTemps(t, tmp); len(m) != 0 {
			t.Errorf("%s: left behind %v", p, m)
		}
	}
}

// TestSpoolCancel: a named pipe no writer opens holds Spool in open(2)
// until ctx ends; then it returns ctx's error, leaving no copy.
func TestSpoolCancel(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(p); err != nil {
		t.Skip(err)
	}
	for _, writer := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		if writer { // one that opens and then writes nothing: a blocked read
			go func() {
				if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
					<-ctx.Done()
					time.Sleep(100 * time.Millisecond)
					f.Close()
				}
			}()
		}
		time.AfterFunc(200*time.Millisecond, cancel)
		done := make(chan error, 1)
		go func() {
			_, err := Spool(ctx, p)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("writer %v: %v, want canceled", writer, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("writer %v: Spool still waits 30 s after ctx ended", writer)
		}
		if m := spoolTemps(t, tmp); len(m) != 0 {
			t.Errorf("left behind %v", m)
		}
	}
}
