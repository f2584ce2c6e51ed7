// Package tomlguard bounds a TOML text before a TOML library sees it. The
// library kvsim uses spends memory and time quadratic in nesting depth (a
// 25 KB file of 5,000 nested inline tables takes about 1 GB to decode), so
// every TOML kvsim reads (scenario, hardware profile, --inject table, --set
// value) is first scanned here: a size limit, and a depth limit counting
// table headers' dotted keys, dotted keys, inline tables and arrays. The
// scan is linear and allocates nothing that grows with the input.
package tomlguard

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxBytes bounds a TOML file kvsim reads: its largest files (a scenario,
// a profile) are a few KiB.
const MaxBytes = 1 << 20

// MaxDepth bounds nesting: kvsim's deepest key is 3 levels down (an
// eviction table in a [[policy]], a key of [workload.inject]); the
// library's cost at 16 levels is still a small constant per byte.
const MaxDepth = 8

var tooLong = &Error{Msg: fmt.Sprintf("longer than %d bytes (1 MiB), the most kvsim reads of a TOML file", MaxBytes)}

// Error says where a limit was passed. Line is 0 for the size limit.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// ReadFile reads at most MaxBytes of the file at path; a longer file (or a
// device that never ends) is a *Error, an unreadable one the os error.
// The open does not wait for a named pipe's writer (it would wait
// forever, deaf to SIGINT): a pipe nobody writes reads as empty.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, tooLong
	}
	if len(data) == 0 {
		if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
			return nil, &Error{Msg: "not a regular file, and nothing was written to it"}
		}
	}
	return data, nil
}

// Check reports the first place src passes MaxBytes or MaxDepth. It does
// not validate TOML: text it cannot follow is left to the parser, which
// then sees at most MaxDepth levels of what Check could follow.
func Check(src []byte) *Error {
	if len(src) > MaxBytes {
		return tooLong
	}
	s := scanner{src: src, line: 1, key: true}
	return s.run()
}

// frame is an open inline table or array and the depth of its values.
type frame struct {
	table bool
	depth int
}

type scanner struct {
	src    []byte
	i      int
	line   int
	stack  [MaxDepth + 1]frame // deeper is refused before a push
	n      int                 // frames open
	header int                 // depth of the last [table] header
	key    bool                // reading a key (before its '=')
	parts  int                 // dotted parts of the key read so far
	start  bool                // at a line's start (a '[' opens a header)
}

func (s *scanner) deep(depth int) *Error {
	return &Error{Line: s.line, Msg: fmt.Sprintf("nested %d levels deep (table headers, dotted keys, inline tables and arrays); kvsim reads at most %d", depth, MaxDepth)}
}

// cur is the depth of the values of the innermost open container.
func (s *scanner) cur() int {
	if s.n == 0 {
		return s.header
	}
	return s.stack[s.n-1].depth
}

func (s *scanner) run() *Error {
	s.start = true
	s.parts = 0
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\n':
			s.line++
			s.i++
			if s.n == 0 { // a new top-level line: a key, a header or nothing
				s.key, s.parts, s.start = true, 0, true
			}
			continue
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
			continue
		case c == '#':
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.i++
			}
			continue
		}
		atStart := s.start
		s.start = false
		switch {
		case c == '"' || c == '\'':
			if s.key && s.parts == 0 {
				s.parts = 1
			}
			s.skipString()
			continue
		case atStart && c == '[' && s.n == 0:
			if err := s.readHeader(); err != nil {
				return err
			}
			continue
		case s.key:
			switch c {
			case '.':
				if s.parts++; s.cur()+s.parts > MaxDepth {
					return s.deep(s.cur() + s.parts)
				}
			case '=':
				d := s.cur() + max(s.parts, 1)
				if d > MaxDepth {
					return s.deep(d)
				}
				s.key = false
				s.parts = d // the depth a table or array opened now gets
			case '}': // an empty inline table, or a trailing comma
				s.pop()
			default:
				if s.parts == 0 {
					s.parts = 1
				}
			}
		default: // a value
			switch c {
			case '{', '[':
				d := s.parts // after '=': the key's depth
				if s.n > 0 && !s.stack[s.n-1].table {
					d = s.stack[s.n-1].depth + 1 // an element of an array
				}
				// Text the scanner cannot follow can open containers
				// without deepening its count: each open one is a level.
				if d = max(d, s.n+1); d > MaxDepth {
					return s.deep(d)
				}
				s.stack[s.n] = frame{table: c == '{', depth: d}
				s.n++
				s.key, s.parts = c == '{', 0
			case '}', ']':
				s.pop()
			case ',':
				if s.n > 0 && s.stack[s.n-1].table {
					s.key, s.parts = true, 0
				}
			}
		}
		s.i++
	}
	return nil
}

// pop closes the innermost container (a stray closer is the parser's to
// report); what follows it is a value's end.
func (s *scanner) pop() {
	if s.n > 0 {
		s.n--
	}
	s.key = false
	if s.n > 0 && !s.stack[s.n-1].table {
		s.parts = s.stack[s.n-1].depth + 1
	}
}

// readHeader reads [a.b] or [[a.b]] and sets the header depth.
func (s *scanner) readHeader() *Error {
	s.i++ // '['
	parts := 1
	for s.i < len(s.src) {
		switch c := s.src[s.i]; c {
		case '"', '\'':
			s.skipString()
			continue
		case '.':
			if parts++; parts > MaxDepth {
				return s.deep(parts)
			}
		case ']', '\n':
			s.header = parts
			s.key, s.parts = false, 0 // the rest of the line: "]", a comment
			return nil
		}
		s.i++
	}
	s.header = parts
	return nil
}

// skipString skips a basic or literal string, single- or multi-line,
// counting its newlines; s.i is at its opening quote.
func (s *scanner) skipString() {
	q := s.src[s.i]
	triple := s.i+2 < len(s.src) && s.src[s.i+1] == q && s.src[s.i+2] == q
	if triple {
		s.i += 3
	} else {
		s.i++
	}
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\' && q == '"':
			if s.i+1 < len(s.src) && s.src[s.i+1] == '\n' {
				s.line++
			}
			s.i += 2
			continue
		case c == '\n':
			s.line++
			if !triple {
				s.i++
				return // unterminated: the parser says so
			}
		case c == q && (!triple || s.i+2 < len(s.src) && s.src[s.i+1] == q && s.src[s.i+2] == q):
			if triple {
				s.i += 3
				for s.i < len(s.src) && s.src[s.i] == q { // """a"""" ends with quotes
					s.i++
				}
			} else {
				s.i++
			}
			return
		}
		s.i++
	}
}
