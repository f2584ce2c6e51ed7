package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// binaryOf converts src to a binary trace in a temporary directory.
func binaryOf(t *testing.T, src, format string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(src)+".kvtc")
	if err := Convert(src, out, Options{Format: format}); err != nil {
		t.Fatal(err)
	}
	return out
}

// readBinary reads a binary trace under the source's name, as the cache is.
func readBinary(t *testing.T, bin, name string, opt Options) string {
	t.Helper()
	if opt.BlockTokens <= 0 {
		opt.BlockTokens = DefaultBlockTokens
	}
	r, err := openBinaryReader(bin, name, opt, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := dump(r)
	if err := r.Rewind(); err != nil {
		t.Fatal(err)
	}
	if again := dump(r); again != s {
		t.Errorf("after Rewind:\n%s\nbefore:\n%s", again, s)
	}
	return s
}

// TestBinarySameRequests: every field of every request, and every error,
// read from the binary form equals the source's parse, for each format and
// under options applied when reading (block size, speedup, limit).
func TestBinarySameRequests(t *testing.T) {
	dir := t.TempDir()
	// A mooncake trace whose line 3 has the wrong block count at 512 but
	// not at 1024, and a speedup that puts the last request out of range.
	odd := filepath.Join(dir, "odd.jsonl")
	os.WriteFile(odd, []byte(`{"timestamp": 10, "input_length": 1024, "output_length": 1, "hash_ids": [1], "session_id": "s"}
{"timestamp": 20, "input_length": 512, "output_length": 1, "hash_ids": [1]}
{"timestamp": 30, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2], "session_id": "s"}
{"timestamp": 5, "input_length": 0, "output_length": 1, "hash_ids": [], "session_id": "s"}
{"timestamp": 9223372036854, "input_length": 0, "output_length": 1, "hash_ids": []}
`), 0o644)
	gen := filepath.Join(dir, "gen.jsonl")
	var b bytes.Buffer
	c := DefaultGenConfig()
	c.Requests = 300
	if err := Generate(&b, c); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(gen, b.Bytes(), 0o644)

	cases := []struct {
		src, format string
		opts        []Options
	}{
		{"testdata/mooncake_sessions.jsonl", "", []Options{{}, {Speedup: 3}, {Limit: 2}, {BlockTokens: 256, SkipBadLines: true}}},
		{"testdata/gen_tiny.jsonl", "", []Options{{}, {Limit: 1}}},
		{"../traces/synthetic.jsonl", "mooncake", []Options{{}, {Speedup: 0.5}}},
		{gen, "", []Options{{}, {Limit: 100}}},
		{odd, "", []Options{{}, {SkipBadLines: true}, {BlockTokens: 1024, SkipBadLines: true}, {Speedup: 1e-9, SkipBadLines: true}}},
		{"testdata/bailian_tiny.jsonl", "bailian", []Options{{BlockTokens: 16}, {BlockTokens: 32}, {BlockTokens: 512, Speedup: 2}}},
		{"testdata/azure_tiny.csv", "azure", []Options{{}, {Speedup: 10}}},
		{"testdata/burstgpt_tiny.csv", "burstgpt", []Options{{}, {Limit: 2}}},
	}
	for _, c := range cases {
		bin := binaryOf(t, c.src, c.format)
		for _, o := range c.opts {
			o.Format = c.format
			want := dumpFile(t, c.src, o)
			got := readBinary(t, bin, c.src, o)
			if got != want {
				t.Errorf("%s %+v: binary:\n%s\nsource:\n%s", c.src, o, got, want)
			}
		}
	}
}

// TestBinarySmall: the binary form of the generated trace is well under a
// third of its JSONL.
func TestBinarySmall(t *testing.T) {
	src := "../traces/synthetic.jsonl"
	bin := binaryOf(t, src, "")
	a, _ := os.Stat(src)
	b, _ := os.Stat(bin)
	if b.Size()*3 > a.Size() {
		t.Errorf("binary %d bytes, source %d", b.Size(), a.Size())
	}
}

// TestDenseIDs: the dense ids of a binary trace number the blocks in order
// of first appearance, as a Dict would.
func TestDenseIDs(t *testing.T) {
	bin := binaryOf(t, "../traces/synthetic.jsonl", "")
	r, err := OpenCached(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := NewDict()
	var q Request
	for r.Next(&q) == nil {
		dense, n := r.DenseIDs()
		if n == 0 || len(dense) != len(q.HashIDs) {
			t.Fatalf("line %d: %d dense ids of %d, n %d", q.Line, len(dense), len(q.HashIDs), n)
		}
		for i, h := range q.HashIDs {
			if d.ID(h) != dense[i] {
				t.Fatalf("line %d: dense %d, dict %d", q.Line, dense[i], d.ID(h))
			}
		}
	}
	if _, n := r.DenseIDs(); n != d.Len() {
		t.Errorf("n = %d, %d distinct", n, d.Len())
	}
	// DenseOnly: the same dense ids, no raw ones.
	r2, err := OpenCached(bin, Options{DenseOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	d2 := NewDict()
	for r2.Next(&q) == nil {
		dense, _ := r2.DenseIDs()
		if len(q.HashIDs) != 0 || len(dense) == 0 && q.InputTokens > 0 {
			t.Fatalf("line %d: DenseOnly gave %d raw, %d dense ids", q.Line, len(q.HashIDs), len(dense))
		}
		for _, b := range dense {
			d2.ID(int64(b))
		}
	}
	if d2.Len() != d.Len() {
		t.Errorf("DenseOnly: %d distinct, want %d", d2.Len(), d.Len())
	}
}

func TestConvertBadLine(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(src, []byte("{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n{\n"), 0o644)
	out := filepath.Join(dir, "bad.kvtc")
	err := Convert(src, out, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), src+":2: invalid JSON") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed conversion left %s", out)
	}
	if err := Convert(filepath.Join(dir, "none"), out, Options{}); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("missing source: %v", err)
	}
	if err := Convert(src, out, Options{Format: "bailian", BlockTokens: 8}); err == nil || !strings.Contains(err.Error(), "multiple of 16") {
		t.Errorf("bad block size: %v", err)
	}
}

// cacheEnv makes the cache apply to small files, in a private cache folder.
func cacheEnv(t *testing.T) string {
	t.Helper()
	old := CacheMinBytes
	CacheMinBytes = 0
	t.Cleanup(func() { CacheMinBytes = old })
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("HOME", home)
	t.Setenv(CacheEnv, "")
	return filepath.Join(home, "kvsim")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func openDump(t *testing.T, path string, opt Options) (string, bool) {
	t.Helper()
	r, err := OpenCached(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return dump(r), r.bin != nil
}

func TestCacheAuto(t *testing.T) {
	cacheEnv(t)
	t.Setenv(CacheEnv, "beside") // a file to look at and damage
	dir := t.TempDir()
	src := filepath.Join(dir, "t.jsonl")
	copyFile(t, "../traces/synthetic.jsonl", src)
	want := dumpFile(t, src, Options{})

	got, bin := openDump(t, src, Options{})
	if got != want || !bin {
		t.Fatalf("first open: binary %v, same %v", bin, got == want)
	}
	beside := src + ".kvtc"
	st1, err := os.Stat(beside)
	if err != nil {
		t.Fatal(err)
	}
	if got, bin = openDump(t, src, Options{}); got != want || !bin {
		t.Fatalf("second open: binary %v, same %v", bin, got == want)
	}
	if st2, _ := os.Stat(beside); !st2.ModTime().Equal(st1.ModTime()) {
		t.Errorf("a fresh cache was rewritten")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}

	// Same size and mtime, other content: the content hash sees it.
	b, _ := os.ReadFile(src)
	i := bytes.Index(b, []byte(`"output_length": `)) + len(`"output_length": `)
	b[i] = '9'
	fi, _ := os.Stat(src)
	os.WriteFile(src, b, 0o644)
	os.Chtimes(src, fi.ModTime(), fi.ModTime())
	want2 := dumpFile(t, src, Options{})
	if want2 == want {
		t.Fatal("the edit changed nothing")
	}
	if got, bin = openDump(t, src, Options{}); got != want2 || !bin {
		t.Errorf("after an edit keeping size and mtime: binary %v, same %v", bin, got == want2)
	}

	// A corrupt cache is rebuilt, never read.
	c, _ := os.ReadFile(beside)
	for _, at := range []int{0, 50, hdrSize + 3, len(c) - 1} {
		cc := append([]byte(nil), c...)
		cc[at] ^= 0x40
		os.WriteFile(beside, cc, 0o644)
		if got, _ := openDump(t, src, Options{}); got != want2 {
			t.Errorf("corrupt at byte %d: different requests", at)
		}
	}
	os.WriteFile(beside, c[:hdrSize+10], 0o644)
	if got, _ := openDump(t, src, Options{}); got != want2 {
		t.Errorf("truncated cache: different requests")
	}

	// Off.
	os.Remove(beside)
	t.Setenv(CacheEnv, "off")
	if got, bin = openDump(t, src, Options{}); got != want2 || bin {
		t.Errorf("cache off: binary %v", bin)
	}
	if _, err := os.Stat(beside); !os.IsNotExist(err) {
		t.Errorf("cache off wrote %s", beside)
	}
}

// TestCacheNotOurs: a NAME.kvtc kvsim did not write is left alone; the
// cache goes to the cache folder. So does one for a read-only directory.
func TestCacheNotOurs(t *testing.T) {
	cdir := cacheEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "t.jsonl")
	copyFile(t, "testdata/gen_tiny.jsonl", src)
	mine := []byte("my notes\n")
	os.WriteFile(src+".kvtc", mine, 0o644)
	want := dumpFile(t, src, Options{})
	for range 2 {
		if got, bin := openDump(t, src, Options{}); got != want || !bin {
			t.Fatalf("binary %v, same %v", bin, got == want)
		}
	}
	if b, _ := os.ReadFile(src + ".kvtc"); !bytes.Equal(b, mine) {
		t.Errorf("overwrote a file kvsim did not create")
	}
	if e, _ := os.ReadDir(cdir); len(e) != 1 || !strings.HasPrefix(e[0].Name(), "t.jsonl-") {
		t.Errorf("cache folder: %v", e)
	}

	if os.Getuid() == 0 {
		return // root writes anywhere
	}
	ro := t.TempDir()
	src2 := filepath.Join(ro, "r.jsonl")
	copyFile(t, "testdata/gen_tiny.jsonl", src2)
	os.Chmod(ro, 0o555)
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	if got, bin := openDump(t, src2, Options{}); got != want || !bin {
		t.Errorf("read-only dir: binary %v", bin)
	}
}

// TestCacheBadLines: a source with a bad line is parsed as ever (errors,
// skipping), with a marker so that it is not converted again.
func TestCacheBadLines(t *testing.T) {
	cacheEnv(t)
	t.Setenv(CacheEnv, "beside") // a file to look at and damage
	dir := t.TempDir()
	src := filepath.Join(dir, "b.jsonl")
	os.WriteFile(src, []byte("{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\nnope\n{\"timestamp\": 2, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": []}\n"), 0o644)
	for _, o := range []Options{{}, {SkipBadLines: true}} {
		want := dumpFile(t, src, o)
		for range 2 {
			got, bin := openDump(t, src, o)
			if got != want || bin {
				t.Errorf("%+v: binary %v\n%s\nwant\n%s", o, bin, got, want)
			}
		}
	}
	h, err := readHeader(src + ".kvtc")
	if err != nil || h.flags&flagUncacheable == 0 {
		t.Errorf("marker: %+v %v", h, err)
	}
	if _, err := OpenCached(src+".kvtc", Options{}); err == nil {
		t.Errorf("a marker read as a trace")
	}
}

// TestCacheStaleMtime: a newer source rebuilds the cache.
func TestCacheStaleMtime(t *testing.T) {
	cacheEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "t.jsonl")
	copyFile(t, "testdata/gen_tiny.jsonl", src)
	openDump(t, src, Options{})
	b, _ := os.ReadFile(src)
	b = append(b, b[bytes.LastIndexByte(b[:len(b)-1], '\n')+1:]...) // the last line again
	os.WriteFile(src, b, 0o644)
	later := time.Now().Add(time.Hour)
	os.Chtimes(src, later, later)
	want := dumpFile(t, src, Options{})
	if got, bin := openDump(t, src, Options{}); got != want || !bin {
		t.Errorf("stale cache: binary %v\n%s\nwant\n%s", bin, got, want)
	}
}

// TestBinaryGiven: a binary trace given as the trace is read in its
// recorded format.
func TestBinaryGiven(t *testing.T) {
	bin := binaryOf(t, "testdata/bailian_tiny.jsonl", "bailian")
	for _, f := range []string{"", "mooncake", "bailian"} {
		got, _ := openDump(t, bin, Options{Format: f, BlockTokens: 32})
		want := dumpFile(t, "testdata/bailian_tiny.jsonl", Options{Format: "bailian", BlockTokens: 32})
		if got != want {
			t.Errorf("format %q: %s", f, got)
		}
	}
	if _, err := OpenCached(bin, Options{Format: "azure"}); err == nil || !strings.Contains(err.Error(), "a binary trace of format bailian, not azure") {
		t.Errorf("format mismatch: %v", err)
	}
	if _, err := OpenCached(bin, Options{BlockTokens: 20}); err == nil || !strings.Contains(err.Error(), "multiple of 16") {
		t.Errorf("block size: %v", err)
	}
}

// TestCachePipe: a trace read from a pipe is read once, as it comes.
func TestCachePipe(t *testing.T) {
	cacheEnv(t)
	p := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(p); err != nil {
		t.Skip(err)
	}
	data, _ := os.ReadFile("testdata/gen_tiny.jsonl")
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			f.Write(data)
			f.Close()
		}
	}()
	got, bin := openDump(t, p, Options{})
	if want := dumpFile(t, "testdata/gen_tiny.jsonl", Options{}); bin || got != strings.ReplaceAll(want, "testdata/gen_tiny.jsonl", p) {
		t.Errorf("binary %v:\n%s\nwant\n%s", bin, got, want)
	}
}

// TestDenseOnlyNotAnInput: run IDs hash the reader's options as JSON;
// DenseOnly changes no request's blocks, so it stays out of them.
func TestDenseOnlyNotAnInput(t *testing.T) {
	a, _ := json.Marshal(Options{})
	b, _ := json.Marshal(Options{DenseOnly: true})
	if string(a) != string(b) {
		t.Errorf("%s != %s", a, b)
	}
}

// TestDenseAll: the bulk read gives what Next gives, and declines (reading
// nothing) where Next would refuse or stop early.
func TestDenseAll(t *testing.T) {
	bin := binaryOf(t, "../traces/synthetic.jsonl", "")
	viaNext := func(opt Options) ([]int32, []int32) {
		r, err := OpenCached(bin, opt)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var blocks []int32
		starts := []int32{0}
		var q Request
		for r.Next(&q) == nil {
			d, _ := r.DenseIDs()
			blocks = append(blocks, d...)
			starts = append(starts, int32(len(blocks)))
		}
		return blocks, starts
	}
	r, _ := OpenCached(bin, Options{DenseOnly: true})
	blocks, starts, n, ok := r.DenseAll(nil, []int32{0})
	r.Close()
	wb, ws := viaNext(Options{})
	if !ok || !reflect.DeepEqual(blocks, wb) || !reflect.DeepEqual(starts, ws) || n != 13699 {
		t.Fatalf("DenseAll: ok %v, %d blocks %d starts %d distinct; Next: %d %d", ok, len(blocks), len(starts), n, len(wb), len(ws))
	}
	for _, o := range []Options{{Limit: 5}, {BlockTokens: 1024}, {Speedup: 2}} {
		r, _ := OpenCached(bin, o)
		if _, _, _, ok := r.DenseAll(nil, []int32{0}); ok {
			t.Errorf("%+v: DenseAll did not decline", o)
		}
		var q Request
		if err := r.Next(&q); (err != nil) != (o.BlockTokens == 1024) || (err == nil && q.Line != 1) {
			t.Errorf("%+v: after declining, Next gives line %d, %v", o, q.Line, err)
		}
		r.Close()
	}
	// Text readers have no bulk read.
	r, _ = Open("../traces/synthetic.jsonl", Options{})
	defer r.Close()
	if _, _, _, ok := r.DenseAll(nil, []int32{0}); ok {
		t.Error("a text reader read in bulk")
	}
}

// TestCacheEditOutsideSamples: a trace past the old sampled hash (its
// first and last MiB and 64 chunks of 64 KiB between) edited between the
// samples, its size and mtime kept (cp -p, rsync -t): the new content is
// read, never the stale cache's.
func TestCacheEditOutsideSamples(t *testing.T) {
	cacheEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "big.jsonl")
	var b bytes.Buffer
	c := DefaultGenConfig()
	c.Requests = 3000
	for b.Len() < 12<<20 {
		b.Reset()
		c.Requests *= 2
		if err := Generate(&b, c); err != nil {
			t.Fatal(err)
		}
	}
	data := b.Bytes()
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(src, old, old)
	if _, bin := openDump(t, src, Options{}); !bin {
		t.Fatal("no cache built")
	}
	// An output_length between two of the old samples, one digit changed.
	const ends, chunks, chunk = 1 << 20, 64, 64 << 10
	size := int64(len(data))
	span := size - 2*ends - chunk
	from := ends + span*31/(chunks-1) + chunk // the end of chunk 31
	to := ends + span*32/(chunks-1)           // the start of chunk 32
	key := []byte(`"output_length": `)
	i := int64(bytes.Index(data[from:], key)) + from + int64(len(key))
	if i < from+int64(len(key)) || i >= to {
		t.Fatalf("no output_length between the samples (%d..%d)", from, to)
	}
	if data[i] == '9' {
		data[i] = '8'
	} else {
		data[i]++
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(src, old, old)
	want := dumpFile(t, src, Options{})
	got, bin := openDump(t, src, Options{})
	if got != want {
		t.Fatal("the stale cache was read after an edit keeping size and mtime")
	}
	if !bin {
		t.Error("the cache was not rebuilt")
	}
}

// TestCacheOldVersion: a cache of an older format (keyed by a sampled
// hash) is rebuilt, never read.
func TestCacheOldVersion(t *testing.T) {
	cacheEnv(t)
	t.Setenv(CacheEnv, "beside") // a file to look at and damage
	src := filepath.Join(t.TempDir(), "t.jsonl")
	copyFile(t, "testdata/gen_tiny.jsonl", src)
	want := dumpFile(t, src, Options{})
	openDump(t, src, Options{})
	c, err := os.ReadFile(src + ".kvtc")
	if err != nil {
		t.Fatal(err)
	}
	c[4] = 2
	os.WriteFile(src+".kvtc", c, 0o644)
	if got, bin := openDump(t, src, Options{}); got != want || !bin {
		t.Fatalf("binary %v, same %v", bin, got == want)
	}
	if h, err := readHeader(src + ".kvtc"); err != nil {
		t.Errorf("not rebuilt: %v", err)
	} else if h.srcSize == 0 {
		t.Errorf("header %+v", h)
	}
	if _, err := OpenCached(writeTemp(t, c), Options{}); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("an old binary trace given as such: %v", err)
	}
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.kvtc")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCacheCancelled: a cancelled context ends the first conversion of a
// large trace (and the hash of a cached one) with ctx's error, leaving no
// cache and no temporary behind.
func TestCacheCancelled(t *testing.T) {
	cacheEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "t.jsonl")
	var b bytes.Buffer
	if err := Generate(&b, DefaultGenConfig()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OpenCachedContext(ctx, src, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("conversion under a cancelled context: %v, want context.Canceled", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left beside the trace: %v", ents)
	}
	// Built, then hashed again under a cancelled context.
	r, err := OpenCachedContext(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := OpenCachedContext(ctx, src, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("hash under a cancelled context: %v, want context.Canceled", err)
	}
}

// TestCacheNotBesideByDefault: unless asked (KVSIM_TRACE_CACHE=beside),
// the cache goes to the user's cache folder and nothing is added beside
// the trace; a cache kvsim wrote beside it earlier is still read.
func TestCacheNotBesideByDefault(t *testing.T) {
	home := cacheEnv(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "t.jsonl")
	copyFile(t, "../traces/synthetic.jsonl", src)
	want := dumpFile(t, src, Options{})
	if got, bin := openDump(t, src, Options{}); got != want || !bin {
		t.Fatalf("first open: binary %v, same %v", bin, got == want)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("added beside the trace: %v", ents)
	}
	if m, _ := filepath.Glob(filepath.Join(home, "t.jsonl-*.kvtc")); len(m) != 1 {
		t.Fatalf("no cache in the cache folder: %v", m)
	}
	// One written beside it when asked is read, not rebuilt elsewhere.
	os.RemoveAll(home)
	t.Setenv(CacheEnv, "beside")
	openDump(t, src, Options{})
	t.Setenv(CacheEnv, "")
	if got, bin := openDump(t, src, Options{}); got != want || !bin {
		t.Fatalf("beside cache: binary %v, same %v", bin, got == want)
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("rebuilt in the cache folder though one beside the trace was good")
	}
}
