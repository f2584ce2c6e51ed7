package results

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"regexp"
)

// kvsim replaces an existing file only if it recognisably wrote it: each
// kind of output has a mark it can be told by. The checks below read a
// file's head only (a summary excepted, which is parsed) and never fail:
// a file that cannot be read is not kvsim's.

// PageGenerator is the <meta> every HTML page kvsim writes carries.
const PageGenerator = `<meta name="generator" content="kvsim">`

// pageHead is how much of a page the marks must lie in: they are in its
// <head>, before the styles.
const pageHead = 8 << 10

// Head is the first n bytes of path (fewer if shorter or unreadable): what
// an owner check reads.
func Head(path string, n int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, n)
	m, _ := io.ReadFull(f, b)
	return b[:m]
}

// IsPage says whether path holds an HTML page kvsim wrote: it carries
// PageGenerator, or, written before that mark existed, the data-kvsim-charts
// attribute every kvsim page has had on <html>.
func IsPage(path string) bool {
	h := Head(path, pageHead)
	return bytes.Contains(h, []byte(PageGenerator)) || bytes.Contains(h, []byte(`<html lang="en" data-kvsim-charts="`))
}

var pageRunID = regexp.MustCompile(`<meta name="kvsim-run-id" content="([0-9a-f]*)">`)

// PageRunID is the run_id a kvsim page carries, "" for none (a page of
// an older kvsim, or of results without one).
func PageRunID(path string) string {
	if m := pageRunID.FindSubmatch(Head(path, pageHead)); m != nil {
		return string(m[1])
	}
	return ""
}

// IsSummary says whether path holds a summary.json (ReadSummary takes it).
func IsSummary(path string) bool {
	_, err := ReadSummary(path)
	return err == nil
}

// IsRequests says whether path holds a requests.csv: its header has
// started so since the first kvsim.
func IsRequests(path string) bool {
	return bytes.HasPrefix(Head(path, 64), []byte("policy,seq,arrival_ms,"))
}

// IsProfile says whether path holds a hardware profile kvsim calibrate
// wrote: its first line is calibrate's.
func IsProfile(path string) bool {
	return bytes.HasPrefix(Head(path, 64), []byte("# kvsim hardware profile, written by kvsim calibrate"))
}

// IsPprof says whether path holds a pprof profile (--cpuprofile,
// --memprofile): a gzip stream whose content starts as a profile.proto
// message: its first 4 fields (or all, in a shorter one) are fields of
// that message, each of its wire type (Go's writer puts time_nanos or
// period_type first, not sample_type).
func IsPprof(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return false
	}
	b := make([]byte, 4<<10)
	n, _ := io.ReadFull(zr, b)
	b = b[:n]
	fields := 0
	for fields < 4 && len(b) > 0 {
		key, k := binary.Uvarint(b)
		if k <= 0 {
			return false
		}
		b = b[k:]
		num, wire := key>>3, key&7
		switch {
		case wire == 2 && (num >= 1 && num <= 6 || num == 11 || num == 13):
			l, k := binary.Uvarint(b)
			if k <= 0 || l > uint64(len(b)-k) {
				return fields >= 2 && k > 0 // a field longer than what was read
			}
			b = b[k+int(l):]
		case wire == 0 && (num >= 7 && num <= 10 || num >= 12 && num <= 14):
			_, k := binary.Uvarint(b)
			if k <= 0 {
				return false
			}
			b = b[k:]
		default:
			return false
		}
		fields++
	}
	return fields == 4 || fields > 0 && len(b) == 0
}

// IsECharts says whether path holds a copy of ECharts (a page's
// assets/echarts.min.js): the script names itself early on.
func IsECharts(path string) bool {
	return bytes.Contains(Head(path, 64<<10), []byte("echarts"))
}

// Replaceable says whether kvsim may put a new file at path: nothing is
// there, an empty regular file (nothing to lose), or a regular file ours
// recognises as kvsim's. exists reports whether something is there.
func Replaceable(path string, ours func(string) bool) (ok, exists bool) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, false
	}
	if err != nil || !st.Mode().IsRegular() {
		return false, true
	}
	return st.Size() == 0 || ours(path), true
}
