package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"kvsim/internal/atomicfile"
)

// A results folder (DIR/<scenario>/) holds one run's summary.json,
// requests.csv and report.html, each carrying the run's run_id. WriteSet
// replaces them in an order such that a process killed at any moment
// leaves either one run's files (report.html perhaps missing: kvsim report
// renders it again) or files whose run_ids differ, which MixedSet tells:
//
//  1. every new file is written whole to a temporary file and fsync'ed;
//  2. the old report.html is removed (it describes the old run), and the
//     folder fsync'ed so that no later step can be seen without it;
//  3. requests.csv is renamed into place (beside the old summary.json
//     its run_id differs: told as mixed);
//  4. summary.json is renamed into place: the new run's commit point;
//  5. report.html is renamed into place, and the folder fsync'ed.
//
// A stale report.html therefore never stands beside newer data.

// Set file names.
const (
	SummaryFile  = "summary.json"
	RequestsFile = "requests.csv"
	PageFile     = "report.html"
)

// ErrNotOurs is returned (wrapped) for a file kvsim would replace but did
// not write.
var ErrNotOurs = errors.New("exists and was not written by kvsim")

// commitStep, set by tests, is called after each step of WriteSet's
// commit (by the name of the file just removed or renamed); its error
// stops WriteSet there, as a kill would.
var commitStep = func(string) error { return nil }

// setOwners tells each file of a set by its content.
var setOwners = map[string]func(string) bool{SummaryFile: IsSummary, RequestsFile: IsRequests, PageFile: IsPage}

// CheckSetOurs refuses a results folder holding a summary.json,
// requests.csv or report.html that kvsim did not write: its error names
// the file and wraps ErrNotOurs.
func CheckSetOurs(dir string) error {
	for _, n := range []string{SummaryFile, RequestsFile, PageFile} {
		p := filepath.Join(dir, n)
		if ok, _ := Replaceable(p, setOwners[n]); !ok {
			return fmt.Errorf("%s %w", p, ErrNotOurs)
		}
	}
	return nil
}

// WriteSet writes a run's results into dir as the steps above say:
// requests.csv from the tiers' header and the parts (files of
// AppendRequest lines, in order), summary.json from sum, and, when page
// is set, report.html from what page renders given the new requests.csv's
// path (a temporary file until the commit).
func WriteSet(dir string, tiers, parts []string, sum *Summary, page func(requestsCSV string) ([]byte, error)) error {
	if err := CheckSetOurs(dir); err != nil {
		return err
	}
	var temps []string
	defer func() {
		for _, t := range temps {
			os.Remove(t) // gone once renamed
		}
	}()
	req, err := stageRequests(filepath.Join(dir, RequestsFile), tiers, parts)
	if err != nil {
		return named("write", filepath.Join(dir, RequestsFile), err)
	}
	temps = append(temps, req)
	b, err := MarshalJSON(sum)
	if err != nil {
		return err
	}
	summ, err := stage(filepath.Join(dir, SummaryFile), b)
	if err != nil {
		return named("write", filepath.Join(dir, SummaryFile), err)
	}
	temps = append(temps, summ)
	var pg string
	if page != nil {
		b, err := page(req)
		if err != nil {
			return err // the renderer's own
		}
		if pg, err = stage(filepath.Join(dir, PageFile), b); err != nil {
			return named("write", filepath.Join(dir, PageFile), err)
		}
		temps = append(temps, pg)
	}
	old := filepath.Join(dir, PageFile)
	if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return named("remove", old, err)
	}
	syncDir(dir)
	if err := commitStep("remove " + PageFile); err != nil {
		return err
	}
	for _, r := range [][2]string{{req, RequestsFile}, {summ, SummaryFile}, {pg, PageFile}} {
		if r[0] == "" {
			continue
		}
		if err := os.Rename(r[0], filepath.Join(dir, r[1])); err != nil {
			return named("rename", filepath.Join(dir, r[1]), err)
		}
		if err := commitStep(r[1]); err != nil {
			return err
		}
	}
	syncDir(dir)
	return nil
}

// stage writes data whole to a temporary file beside path, fsync'ed, and
// returns its name.
func stage(path string, data []byte) (string, error) {
	return atomicfile.Stage(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// named makes err name path, the file the user knows, not a temporary
// one.
func named(op, path string, err error) error { return atomicfile.Named(op, path, err) }

// syncDir makes the renames and removals in dir durable where the file
// system allows; the order of steps that a kill sees does not depend on
// it, so a folder that cannot be synced is not an error.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// SetFileID is the run_id one file of a results folder carries ("" for
// none).
type SetFileID struct {
	Name, RunID string
}

// SetRunIDs reads the run_ids of the files of the results folder dir that
// are there and tell theirs: summary.json, requests.csv (its first row: a
// run writes the file whole; a file without rows tells nothing) and
// report.html.
func SetRunIDs(dir string) []SetFileID {
	var ids []SetFileID
	if s, err := ReadSummary(filepath.Join(dir, SummaryFile)); err == nil {
		ids = append(ids, SetFileID{SummaryFile, s.RunID})
	}
	if rr, err := OpenRequests(filepath.Join(dir, RequestsFile)); err == nil {
		var q Request
		if rr.Next(&q) == nil {
			ids = append(ids, SetFileID{RequestsFile, q.RunID})
		}
		rr.Close()
	}
	if p := filepath.Join(dir, PageFile); IsPage(p) {
		ids = append(ids, SetFileID{PageFile, PageRunID(p)})
	}
	return ids
}

// MixedSet says, when the files of the results folder dir carry
// different run_ids, which carries which ("summary.json run_id X,
// report.html run_id Y"); "" when they agree.
func MixedSet(dir string) string {
	ids := SetRunIDs(dir)
	var parts []string
	mixed := false
	for _, f := range ids {
		id := f.RunID
		if id == "" {
			id = "none"
		}
		parts = append(parts, f.Name+" run_id "+id)
		mixed = mixed || f.RunID != ids[0].RunID
	}
	if !mixed {
		return ""
	}
	return strings.Join(parts, ", ")
}

// CopySet copies the results set of folder src into folder dst in
// WriteSet's kill-safe order: every file staged first, the old
// report.html removed, then requests.csv, summary.json and report.html
// renamed in. The caller holds both folders' locks.
func CopySet(src, dst string) error {
	if err := CheckSetOurs(dst); err != nil {
		return err
	}
	var temps []string
	defer func() {
		for _, t := range temps {
			os.Remove(t) // gone once renamed
		}
	}()
	order := []string{RequestsFile, SummaryFile, PageFile}
	for _, n := range order {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		t, err := stage(filepath.Join(dst, n), b)
		if err != nil {
			return named("write", filepath.Join(dst, n), err)
		}
		temps = append(temps, t)
	}
	old := filepath.Join(dst, PageFile)
	if err := os.Remove(old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return named("remove", old, err)
	}
	syncDir(dst)
	if err := commitStep("remove " + PageFile); err != nil {
		return err
	}
	for i, n := range order {
		if err := os.Rename(temps[i], filepath.Join(dst, n)); err != nil {
			return named("rename", filepath.Join(dst, n), err)
		}
		if err := commitStep(n); err != nil {
			return err
		}
	}
	syncDir(dst)
	return nil
}
