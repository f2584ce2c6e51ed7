package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"kvsim/experiment"
	"kvsim/trace"
)

// runTraceConvert is `kvsim trace convert`: it writes a trace's binary form
// (.kvtc), which run, sweep and mrc read in place of the trace, with no
// parsing. The automatic cache makes the same file beside a large trace;
// convert makes it on demand, anywhere, for any size.
func runTraceConvert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trace convert", "kvsim trace convert [--format F] IN OUT", stderr)
	format := fs.String("format", "mooncake", "format `F` of IN: "+strings.Join(trace.Formats(), ", "))
	force := fs.Bool("force", false, "replace OUT if it exists and is a binary trace")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return badInputf("trace convert: want IN and OUT, got %d argument(s)", len(pos))
	}
	in, out := pos[0], pos[1]
	if !slices.Contains(trace.Formats(), *format) {
		return badInputf("trace convert: --format: unknown trace format %q (known: %s)", *format, strings.Join(trace.Formats(), ", "))
	}
	// OUT is never IN, even with --force (the binary trace given as IN).
	if err := checkNotInput("trace convert: OUT", out, []role{{"IN", in}}); err != nil {
		return err
	}
	// Never replace what kvsim did not write; a binary trace only with --force.
	// Not a regular file (a named pipe would block the check below): refused.
	if st, err := os.Lstat(out); err == nil && !st.Mode().IsRegular() {
		return badInputf("trace convert: %s exists and is not a regular file (a folder, device, pipe, socket or symbolic link): not replaced", out)
	}
	if f, err := os.Open(out); err == nil {
		var magic [4]byte
		_, rerr := io.ReadFull(f, magic[:])
		f.Close()
		if rerr != nil || string(magic[:]) != "KVTC" {
			return badInputf("trace convert: %s exists and is not a binary trace: not replaced", out)
		}
		if !*force {
			return badInputf("trace convert: %s exists (--force replaces a binary trace)", out)
		}
	}
	// Its folder must exist and be writable: checked here, so that the
	// message names OUT, not the temporary file it is written through.
	if err := checkOutFile("trace convert:", out); err != nil {
		return err
	}
	if f, ok := trace.LookupFormat(*format); ok && f.Magic != "" {
		// Its requests are derived on every read, never stored as a binary trace.
		return badInputf("trace convert: %s: a %s file is read as it is, not converted to a binary trace", in, f.Name)
	}
	release, err := experiment.SpoolTrace(ctx, in) // a pipe or device: checked, and ctx ends it
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return badInputf("trace convert: %v", err)
	}
	defer release()
	// The block size is chosen when the binary trace is read: any will do.
	if err := trace.ConvertContext(ctx, in, out, trace.Options{Format: *format, BlockTokens: 16}); err != nil {
		var pe *os.PathError
		var le *trace.LineError
		if errors.As(err, &pe) || errors.As(err, &le) {
			return badInputf("trace convert: %v", err)
		}
		return err
	}
	var a os.FileInfo
	f, errA := trace.OpenFile(in) // a piped trace's copy has its size
	if errA == nil {
		a, errA = f.Stat()
		f.Close()
	}
	b, errB := os.Stat(out)
	if errA == nil && errB == nil {
		fmt.Fprintf(stdout, "%s: %d bytes -> %s: %d bytes (%.1f%%)\n", in, a.Size(), out, b.Size(), 100*float64(b.Size())/float64(max(a.Size(), 1)))
	}
	return nil
}
