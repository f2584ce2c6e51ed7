package bucket

import (
	"strings"
	"sync"
	"syscall"

	"kvsim/hw/ioengine"
)

// FaultPlan says which I/O a FaultEngine fails. Zero fields inject nothing.
type FaultPlan struct {
	FailWrite int   // fail the Nth write op (1-based)
	FailAfter int64 // fail writes once this many bytes were written in total (the one that crosses the line writes up to it, rounded down to TornAlign)
	Sticky    bool  // after a failed write, fail every later write too: a full disk stays full
	Err       error // errno for failed writes; default ENOSPC
	// Torn bytes of a write failed by FailWrite still reach the file,
	// rounded down to TornAlign (default 4096, so O_DIRECT accepts it): a
	// torn write.
	Torn      int
	TornAlign int

	FailRead int   // fail the Nth read op (1-based)
	ReadErr  error // default EIO
	FailSync int   // fail the Nth Fdatasync (1-based)
	SyncErr  error // default EIO
}

// FaultEngine wraps an Engine and fails chosen writes, reads and syncs, to
// test how a store copes with ENOSPC and EIO without filling a disk. Ops it
// does not fail pass through to the inner engine in batches, so queue depth
// is kept. It does not own the inner engine: Close leaves it open.
type FaultEngine struct {
	inner ioengine.Engine

	mu                   sync.Mutex
	plan                 FaultPlan
	writes, reads, syncs int
	written              int64
	broken               bool // a sticky failure happened
	faults               int
}

// NewFaultEngine wraps inner with plan.
func NewFaultEngine(inner ioengine.Engine, plan FaultPlan) *FaultEngine {
	f := &FaultEngine{inner: inner}
	f.SetPlan(plan)
	return f
}

// SetPlan replaces the plan and restarts the counts it refers to.
func (f *FaultEngine) SetPlan(p FaultPlan) {
	if p.Err == nil {
		p.Err = syscall.ENOSPC
	}
	if p.ReadErr == nil {
		p.ReadErr = syscall.EIO
	}
	if p.SyncErr == nil {
		p.SyncErr = syscall.EIO
	}
	if p.TornAlign <= 0 {
		p.TornAlign = 4096
	}
	f.mu.Lock()
	f.plan = p
	f.writes, f.reads, f.syncs, f.written, f.broken = 0, 0, 0, 0, false
	f.mu.Unlock()
}

// Faults is how many ops and syncs were failed so far.
func (f *FaultEngine) Faults() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.faults
}

// Written is how many bytes writes passed through (torn parts included)
// since the plan was set.
func (f *FaultEngine) Written() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written
}

func (f *FaultEngine) Name() string { return "faultfs(" + f.inner.Name() + ")" }
func (f *FaultEngine) Close() error { return nil }

// Do runs ops in order; runs of ops the plan lets through go to the inner
// engine together.
func (f *FaultEngine) Do(ops []ioengine.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	start := 0
	for i := range ops {
		op := &ops[i]
		keep, errno := f.decide(op)
		if errno == nil {
			continue
		}
		note(f.pass(ops[start:i]))
		f.faults++
		op.N, op.Err = 0, nil
		if keep > 0 {
			part := []ioengine.Op{{Write: true, FD: op.FD, Off: op.Off, Buf: op.Buf[:keep]}}
			f.inner.Do(part)
			op.N = part[0].N
		}
		what := "read"
		if op.Write {
			what = "write"
		}
		op.Err = &faultErr{op: what, errno: errno}
		note(op.Err)
		start = i + 1
	}
	note(f.pass(ops[start:]))
	return first
}

func (f *FaultEngine) pass(ops []ioengine.Op) error {
	if len(ops) == 0 {
		return nil
	}
	return f.inner.Do(ops)
}

// decide says whether op fails, and how many of its bytes land first.
func (f *FaultEngine) decide(op *ioengine.Op) (keep int, errno error) {
	p := &f.plan
	if !op.Write {
		f.reads++
		if p.FailRead > 0 && f.reads == p.FailRead {
			return 0, p.ReadErr
		}
		return 0, nil
	}
	f.writes++
	if f.broken {
		return 0, p.Err
	}
	torn := func(n int) int { return min(n, len(op.Buf)) / p.TornAlign * p.TornAlign }
	// written counts what passing writes will move when the batch runs, so
	// that FailAfter sees the ops before it in the same batch.
	if p.FailWrite > 0 && f.writes == p.FailWrite {
		f.broken = p.Sticky
		keep = torn(p.Torn)
	} else if p.FailAfter > 0 && f.written+int64(len(op.Buf)) > p.FailAfter {
		f.broken = p.Sticky
		keep = torn(int(max(0, p.FailAfter-f.written)))
	} else {
		f.written += int64(len(op.Buf))
		return 0, nil
	}
	f.written += int64(keep)
	return keep, p.Err
}

// Fdatasync fails the planned sync, else syncs fd.
func (f *FaultEngine) Fdatasync(fd int) error {
	f.mu.Lock()
	f.syncs++
	fail := f.plan.FailSync > 0 && f.syncs == f.plan.FailSync
	err := f.plan.SyncErr
	if fail {
		f.faults++
	}
	f.mu.Unlock()
	if fail {
		return &faultErr{op: "fdatasync", errno: err}
	}
	if y, ok := f.inner.(bucketSyncer); ok {
		return y.Fdatasync(fd)
	}
	return faultSync(fd)
}

// faultErr marks an injected failure; errors.Is sees the errno.
type faultErr struct {
	op    string
	errno error
}

func (e *faultErr) Error() string {
	return "faultfs: injected " + e.op + " failure: " + e.errno.Error()
}
func (e *faultErr) Unwrap() error { return e.errno }

// The file-system calls a FaultFS can fail, as FSFault.Op names them.
const (
	FSOpen    = "open"    // open(2) of a file or directory, creating or not
	FSStat    = "stat"    // stat(2)
	FSRead    = "read"    // reading a whole small file (metadata)
	FSReadDir = "readdir" // listing a directory
	FSRename  = "rename"  // rename(2)
	FSLink    = "link"    // link(2)
	FSUnlink  = "unlink"  // unlink(2)
	FSMkdir   = "mkdir"   // mkdir(2)
	FSSyncDir = "syncdir" // fsync(2) of a directory
	FSLock    = "lock"    // flock(2) of the store's directory, which keeps other processes out
)

// FSFault is one failure a FaultFS injects, modelled on pebble's errorfs:
// an operation, a path filter and which matching call fails.
type FSFault struct {
	Op   string // an FS* name; "" matches every operation
	Path string // only paths whose base name contains this; "" matches all
	Nth  int    // fail the Nth matching call (1-based); 0 fails every one
	Err  error  // the errno; default EIO
}

// FaultFS stands between the bucket store and the file system (set
// StoreOptions.FS): it fails chosen opens, stats, reads, renames, links,
// unlinks, mkdirs, directory fsyncs and the store's lock, and logs every call it sees, so
// that tests can check what a transient failure does and in which order
// the store syncs. Data I/O and fdatasync go through the Engine (see
// FaultEngine), not here.
type FaultFS struct {
	mu     sync.Mutex
	faults []FSFault
	seen   []int
	calls  []string
	failed int
}

// NewFaultFS returns a FaultFS that injects faults (none: it only logs).
func NewFaultFS(faults ...FSFault) *FaultFS {
	f := &FaultFS{}
	f.SetFaults(faults...)
	return f
}

// SetFaults replaces the faults and restarts their counts and the log.
func (f *FaultFS) SetFaults(faults ...FSFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append([]FSFault(nil), faults...)
	for i := range f.faults {
		if f.faults[i].Err == nil {
			f.faults[i].Err = syscall.EIO
		}
	}
	f.seen = make([]int, len(faults))
	f.calls, f.failed = nil, 0
}

// Faults is how many calls were failed since the faults were set.
func (f *FaultFS) Faults() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// Calls is the log of calls since the faults were set, each "op path",
// with " FAILED" appended to those that were failed.
func (f *FaultFS) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// check logs a call and says whether it fails. A nil FaultFS passes all.
func (f *FaultFS) check(op, path string) error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	base := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		base = path[i+1:]
	}
	for i, x := range f.faults {
		if (x.Op != "" && x.Op != op) || (x.Path != "" && !strings.Contains(base, x.Path)) {
			continue
		}
		f.seen[i]++
		if x.Nth == 0 || f.seen[i] == x.Nth {
			f.failed++
			f.calls = append(f.calls, op+" "+path+" FAILED")
			return &faultErr{op: op + " " + path, errno: x.Err}
		}
	}
	f.calls = append(f.calls, op+" "+path)
	return nil
}
