package trace

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"kvsim/param"
)

// FormatSpec describes a trace format: the kind of line a Reader parses.
// Each is registered by its own file (format_*.go) with a fixture under
// testdata that TestFormatsCovered reads against its golden.
type FormatSpec struct {
	Name string
	// ID is the format's number in a binary trace's header (cache.go): it
	// never changes once released, and IDs are dense from 0.
	ID int
	// Doc says what the format is, in the scenario reference's words (in
	// parentheses after its name; formats with equal Docs are listed
	// together); "\n" breaks the reference's line.
	Doc string
	// Fixture is a small trace in testdata, read with the defaults; its
	// requests are pinned in testdata/<fixture without extension>.golden.
	Fixture string
	// line parses one non-blank line into v (raw's contract).
	line func(r *Reader, line []byte, v *values) (ids []int64, reason string, empty bool, err error)
	// HashBlock, if not 0, is the tokens each hash id of the format
	// covers: block_tokens must be a multiple of it.
	HashBlock int
	// Row is the format's row of the table in docs/traces.md.
	Row FormatRow
	// Magic, if set, marks a binary format: its files start with it and
	// are converted to Mooncake JSONL by the converter the program sets
	// (SetConverter) before the line reader runs; line is then mooncake's.
	Magic string
}

// A Converter writes the requests of the file src (named name in errors)
// as Mooncake JSONL of blockTokens-token blocks to dst. The same input must
// give the same bytes.
type Converter func(src io.Reader, name string, blockTokens int, dst io.Writer) error

// converters are the binary formats' converters, by format name: set by the
// program, since their decoders sit in packages above this one.
var converters sync.Map

// SetConverter sets the converter of the binary format named name.
func SetConverter(name string, c Converter) { converters.Store(name, c) }

// convertFile converts the file at path (kind a binary format) into memory;
// ctx ends it (a converter may read a failed read as the log's end, so
// ctx is checked after it too).
func convertFile(ctx context.Context, path string, kind, blockTokens int) ([]byte, error) {
	f := formats[kind]
	c, ok := converters.Load(f.Name)
	if !ok {
		return nil, fmt.Errorf("trace: %s: format %s is read by the kvsim command only (no converter set)", path, f.Name)
	}
	src, err := os.Open(resolve(path))
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer src.Close()
	var b bytes.Buffer
	err = c.(Converter)(bufio.NewReaderSize(ctxReader{ctx, src}, 1<<20), path, blockTokens, &b)
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// FormatRow describes a format in docs/traces.md's table, column by column.
type FormatRow struct {
	File     string // the file's layout and fields read
	Times    string // what a timestamp is
	IDs      string // what block ids it carries
	Sessions string // how turns of one conversation are linked
}

// Ident names the format to its registry: its ID is its rank.
func (s FormatSpec) Ident() (string, int) { return s.Name, s.ID }

// registry holds the formats; formats is its list, indexed by ID (IDs are
// dense from 0: TestFormatsCovered).
var (
	registry = param.Registry[FormatSpec]{What: "trace format"}
	formats  []FormatSpec
)

// registerFormat adds a format; called from init functions of this package.
func registerFormat(s FormatSpec) {
	registry.Add(s)
	formats = registry.All()
}

// FormatSpecs lists the trace formats a Reader reads, by ID.
func FormatSpecs() []FormatSpec { return registry.All() }

// Formats lists the names of the trace formats a Reader reads, by ID.
func Formats() []string { return registry.Names() }

// formatKind resolves Options.Format to an ID ("" is mooncake).
func formatKind(name string) (int, error) {
	if name == "" {
		return fmtMooncake, nil
	}
	for _, f := range formats {
		if f.Name == name {
			return f.ID, nil
		}
	}
	return 0, fmt.Errorf("unknown trace format %q (known: %s)", name, strings.Join(Formats(), ", "))
}

// checkOptions reports an option the format cannot honour.
func checkOptions(opt Options) (int, error) {
	k, err := formatKind(opt.Format)
	if err != nil {
		return 0, err
	}
	if err := formats[k].CheckBlockTokens(opt.BlockTokens, "block_tokens"); err != nil {
		return 0, err
	}
	return k, nil
}

// CheckBlockTokens reports a block size (named as key) the format cannot
// regroup its hash ids into.
func (f *FormatSpec) CheckBlockTokens(blockTokens int, key string) error {
	if h := f.HashBlock; h > 0 && blockTokens%h != 0 {
		return fmt.Errorf("%s traces hash %d-token blocks: %s must be a multiple of %d, got %d", f.Name, h, key, h, blockTokens)
	}
	return nil
}

// LookupFormat returns the spec of the format named name.
func LookupFormat(name string) (FormatSpec, bool) {
	k, err := formatKind(name)
	if err != nil || name == "" {
		return FormatSpec{}, false
	}
	return formats[k], true
}
