package trace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// A run reads its trace several times (its run_id, the statistics line,
// each policy), which a pipe, /dev/stdin or a device cannot give: the
// first pass drained it, or it never ends. Spool copies such an input once
// into a temporary regular file, and every later open of the same path in
// this process (Open, OpenCached, Convert, OpenFile) reads that copy,
// under the path's own name.

// SpoolMaxBytes bounds what Spool copies: more is refused (a trace that
// large belongs in a file, which is read in place).
var SpoolMaxBytes int64 = 8 << 30

// spools are the inputs copied so far; mu is held while one is copied.
var spools struct {
	mu   sync.Mutex
	list []*spooled
}

type spooled struct {
	path string
	fi   os.FileInfo
	tmp  string
	refs int
}

// lookup finds the copy of path (the same path, or the same pipe or device
// by another name); mu held.
func lookup(path string, fi os.FileInfo) *spooled {
	for _, s := range spools.list {
		if s.path == path || os.SameFile(s.fi, fi) {
			return s
		}
	}
	return nil
}

// resolve is the file that holds the trace at path: its spooled copy if
// Spool made one, else path itself.
func resolve(path string) string {
	spools.mu.Lock()
	defer spools.mu.Unlock()
	if len(spools.list) == 0 {
		return path
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return path
	}
	if s := lookup(path, fi); s != nil {
		return s.tmp
	}
	return path
}

// Resolve is the file that holds the trace at path: its spooled copy if
// Spool made one, else path itself.
func Resolve(path string) string { return resolve(path) }

// OpenFile opens the file holding the trace at path, for a reader of its
// bytes (a content hash): its spooled copy if Spool made one.
func OpenFile(path string) (*os.File, error) { return os.Open(resolve(path)) }

// Spool makes the trace at path readable more than once: a regular file (or
// a folder, or a path that does not exist, which the open reports) is left
// as it is; anything else (a named pipe, /dev/stdin on a pipe, a character
// device) is copied once into a temporary file, which release removes
// (every Spool of a path needs its release; the copy goes with the last).
// The copy stops with an error "PATH: reason" at SpoolMaxBytes, at a NUL byte
// or a line longer than MaxLineBytes in a text trace (so /dev/zero and
// /dev/urandom fail at once), and with ctx's error when ctx ends, even
// while the open waits for a pipe's writer.
func Spool(ctx context.Context, path string) (release func(), err error) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() || fi.IsDir() {
		return func() {}, nil
	}
	spools.mu.Lock()
	defer spools.mu.Unlock()
	s := lookup(path, fi)
	if s == nil {
		tmp, err := spool(ctx, path, fi)
		if err != nil {
			return nil, err
		}
		s = &spooled{path: path, fi: fi, tmp: tmp}
		spools.list = append(spools.list, s)
	}
	s.refs++
	var once sync.Once
	return func() { once.Do(func() { unspool(s) }) }, nil
}

// unspool drops a reference to s, removing its copy with the last.
func unspool(s *spooled) {
	spools.mu.Lock()
	defer spools.mu.Unlock()
	if s.refs--; s.refs > 0 {
		return
	}
	os.Remove(s.tmp)
	for i, x := range spools.list {
		if x == s {
			spools.list = append(spools.list[:i], spools.list[i+1:]...)
			break
		}
	}
}

// spool copies path to a new temporary file and returns its name.
func spool(ctx context.Context, path string, fi os.FileInfo) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	// open(2) of a named pipe waits for a writer, which may never come: it
	// runs aside, and ctx can end the wait.
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	var f *os.File
	select {
	case o := <-ch:
		if o.err != nil {
			return "", o.err // *PathError names the file
		}
		f = o.f
	case <-ctx.Done():
		wakeOpen(path, fi)
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return "", ctx.Err()
	}
	tmp, err := os.CreateTemp("", "kvsim-trace-*")
	if err != nil {
		f.Close()
		return "", fmt.Errorf("%s: a temporary copy in %s: %w", path, os.TempDir(), pathErr(err))
	}
	// The copy runs aside too: a read of a pipe is ended by its deadline,
	// one of a device that cannot have one is left to end on its own.
	done := make(chan error, 1)
	go func() { done <- copyTrace(ctx, tmp, f, path) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		f.SetReadDeadline(time.Now())
		err = ctx.Err()
	}
	f.Close()
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: copying it to %s: %w", path, os.TempDir(), pathErr(cerr))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// copyTrace copies src (the input at path) to dst, refusing what cannot be
// a trace: past SpoolMaxBytes; unless it starts as a binary trace does, a
// NUL byte or a line longer than MaxLineBytes (the parser's limit).
func copyTrace(ctx context.Context, dst io.Writer, src io.Reader, path string) error {
	br := bufio.NewReaderSize(src, 1<<20)
	head, err := br.Peek(8) // the longest magic
	if err != nil && err != io.EOF {
		return readErr(ctx, path, err)
	}
	text := !strings.HasPrefix(string(head), binMagic)
	for _, f := range formats {
		if f.Magic != "" && strings.HasPrefix(string(head), f.Magic) {
			text = false
		}
	}
	buf := make([]byte, 1<<20)
	var off, line int64 // bytes so far; bytes of the line so far
	lines := 1
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := br.Read(buf)
		b := buf[:k]
		if off+int64(k) > SpoolMaxBytes {
			return fmt.Errorf("%s: more than %d bytes through a pipe or device: save the trace to a file and give that",
				path, SpoolMaxBytes)
		}
		if text {
			if i := bytes.IndexByte(b, 0); i >= 0 {
				return fmt.Errorf("%s: not a text trace (a NUL byte at byte %d)", path, off+int64(i))
			}
			for len(b) > 0 {
				j := bytes.IndexByte(b, '\n')
				if j < 0 {
					line += int64(len(b))
				} else {
					line += int64(j + 1)
				}
				if line > MaxLineBytes {
					return fmt.Errorf("%s: line %d is longer than %d bytes: not a trace", path, lines, MaxLineBytes)
				}
				if j < 0 {
					break
				}
				line, lines, b = 0, lines+1, b[j+1:]
			}
		}
		if _, werr := dst.Write(buf[:k]); werr != nil {
			return fmt.Errorf("%s: copying it to %s: %w", path, os.TempDir(), pathErr(werr))
		}
		off += int64(k)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return readErr(ctx, path, err)
		}
	}
}

// readErr is a failed read of path, or ctx's error if ctx ended it.
func readErr(ctx context.Context, path string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return errors.New(path + ": read error: " + oneLine(pathErr(err).Error()))
}

// pathErr is the cause of a *PathError (the temporary file's name means
// nothing to the user).
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
