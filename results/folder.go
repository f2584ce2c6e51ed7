package results

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"kvsim/internal/atomicfile"
)

// Results folders (DIR/<scenario>/, and DIR itself for its index.html)
// are written by one kvsim at a time: a run, a sweep point or a report
// holds an exclusive lock on LockFile inside the folder for as long as it
// writes there. The file stays (removing a lock file races with the next
// taker); it holds nothing.
const LockFile = ".kvsim.lock"

// More names of a results folder's files.
const (
	IndexFile   = "index.html"     // DIR/index.html, comparing DIR's scenarios
	AssetsDir   = "assets"         // a local copy of ECharts beside a page
	EChartsFile = "echarts.min.js" // in AssetsDir
	// ManifestFile lists a sharded sweep's points for kvsim merge
	// (experiment.Manifest): hidden, like LockFile, being bookkeeping.
	ManifestFile = ".kvsim-sweep.json"
)

// SetFiles are the files of one run's results folder, in no order.
var SetFiles = []string{SummaryFile, RequestsFile, PageFile}

// ErrBusy is returned (wrapped) when another kvsim holds a folder's lock.
var ErrBusy = errors.New("in use by another kvsim")

// The temporaries kvsim makes in a results folder, besides those of the
// files it writes whole (atomicfile.For).
var (
	PartTemp  = atomicfile.Temp{Prefix: ".requests-", Suffix: ".csv"} // one policy's requests.csv rows
	ProbeTemp = atomicfile.Temp{Prefix: ".kvsim-probe-"}              // a check that the folder is writable
)

// staleTemps are every temporary a killed kvsim may leave in a results
// folder; nothing else there is removed.
var staleTemps = []atomicfile.Temp{PartTemp, atomicfile.For(RequestsFile), atomicfile.For(SummaryFile),
	atomicfile.For(PageFile), atomicfile.For(IndexFile), atomicfile.For(ManifestFile), ProbeTemp}

// lockPoll is how often a waiting Lock retries a held lock.
const lockPoll = 100 * time.Millisecond

// A Folder is a results folder whose lock this process holds: while it
// does, it alone writes there.
type Folder struct {
	Dir string
	f   *os.File
}

// Lock takes the lock of the folder dir (which must exist), then removes
// the temporaries a killed kvsim left there. Without wait a held lock
// fails at once (wrapping ErrBusy); with wait it is retried until free or
// ctx ends (ctx's error).
func Lock(ctx context.Context, dir string, wait bool) (*Folder, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot lock the folder: %v", dir, atomicfile.Cause(err))
	}
	for {
		err := tryLockFile(f)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrBusy) {
			f.Close()
			return nil, fmt.Errorf("%s: cannot lock the folder: %v", dir, err)
		}
		if !wait {
			f.Close()
			return nil, fmt.Errorf("%s: %w (a run, sweep or report writing there); wait for it to finish, or pass --wait", dir, ErrBusy)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
	atomicfile.RemoveStale(dir, staleTemps...)
	atomicfile.RemoveStale(filepath.Join(dir, AssetsDir), atomicfile.For(EChartsFile))
	return &Folder{Dir: dir, f: f}, nil
}

// Unlock releases the folder.
func (d *Folder) Unlock() {
	if d.f != nil {
		unlockFile(d.f)
		d.f.Close()
		d.f = nil
	}
}

// LockAll locks every folder of dirs, in one order for every process so
// that two waiting kvsims cannot deadlock; folders[i] is dirs[i]'s (one
// Folder for two names of a folder), and unlock releases them all. On
// error none is held.
func LockAll(ctx context.Context, dirs []string, wait bool) (folders []*Folder, unlock func(), err error) {
	type key struct {
		abs string
		i   int
	}
	var ks []key
	for i, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", d, err)
		}
		ks = append(ks, key{a, i})
	}
	slices.SortStableFunc(ks, func(a, b key) int { return strings.Compare(a.abs, b.abs) })
	var held []*Folder
	unlock = func() {
		for _, f := range held {
			f.Unlock()
		}
	}
	folders = make([]*Folder, len(dirs))
	for n, k := range ks {
		if n > 0 && k.abs == ks[n-1].abs {
			folders[k.i] = folders[ks[n-1].i]
			continue
		}
		f, err := Lock(ctx, dirs[k.i], wait)
		if err != nil {
			unlock()
			return nil, nil, err
		}
		held = append(held, f)
		folders[k.i] = f
	}
	return folders, unlock, nil
}

// CheckOurs refuses the folder if it holds a set file kvsim did not
// write (CheckSetOurs).
func (d *Folder) CheckOurs() error { return CheckSetOurs(d.Dir) }

// Mixed says which of the folder's files carry which run_id when they
// differ (MixedSet).
func (d *Folder) Mixed() string { return MixedSet(d.Dir) }

// WriteSet replaces the folder's set in its kill-safe order (WriteSet).
func (d *Folder) WriteSet(tiers, parts []string, sum *Summary, page func(requestsCSV string) ([]byte, error)) error {
	return WriteSet(d.Dir, tiers, parts, sum, page)
}

// WriteFile replaces the folder's file name whole.
func (d *Folder) WriteFile(name string, data []byte) error {
	return atomicfile.Write(filepath.Join(d.Dir, name), data)
}

// ProbeWritable creates and removes a file in dir: the only check of
// write permission that holds for every user, root included. Its error
// is the cause alone (the caller names dir).
func ProbeWritable(dir string) error {
	f, err := ProbeTemp.Create(dir)
	if err != nil {
		return atomicfile.Cause(err)
	}
	f.Close()
	// Another kvsim cleaning the folder may have removed it already.
	if err := os.Remove(f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return atomicfile.Cause(err)
	}
	return nil
}
