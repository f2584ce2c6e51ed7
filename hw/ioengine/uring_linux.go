//go:build linux

package ioengine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/sys"
)

// Kernel ABI (include/uapi/linux/io_uring.h). x/sys has the syscall
// numbers but none of the structs, so they are declared here.
type uringParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFD         uint32
	resv         [3]uint32
	sqOff        sqringOffsets
	cqOff        cqringOffsets
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	_           uint64
}

type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// Compile-time layout checks: each constant is 0 only when the size is
// exact; any other size overflows the unsigned constant and fails to build.
const (
	_ = -(unsafe.Sizeof(uringParams{}) - 120)
	_ = -(unsafe.Sizeof(uringSQE{}) - 64)
	_ = -(unsafe.Sizeof(uringCQE{}) - 16)
)

const (
	ioringOpReadFixed  = 4
	ioringOpWriteFixed = 5
	ioringOpRead       = 22
	ioringOpWrite      = 23

	ioringSetupClamp       = 1 << 4
	ioringFeatSingleMmap   = 1 << 0
	ioringEnterGetevents   = 1 << 0
	ioringRegisterBuffers  = 0
	ioringOffSQRing        = 0
	ioringOffCQRing        = 0x8000000
	ioringOffSQEs          = 0x10000000
	ioringMaxBufferSize    = 1 << 30 // the kernel refuses larger registered buffers
	ioringMaxRetries       = 16      // EINTR/EAGAIN completions before an op fails
	ioringMaxEnterAttempts = 1000
)

// uringSetup is io_uring_setup(2); tests replace it to force a fallback.
var uringSetup = func(entries uint32, p *uringParams) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// uringEnter is io_uring_enter(2); tests replace it to fail calls.
var uringEnter = func(fd int, toSubmit, minComplete, flags uint32) (int, unix.Errno) {
	r, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
	return int(r), errno
}

// uringDrainTimeout bounds the wait for ops already submitted when
// io_uring_enter fails.
const uringDrainTimeout = 30 * time.Second

type regBuf struct{ base, len uintptr }

type uringSlot struct {
	i       int // op number in the stream
	op      Op
	retries int
	busy    bool // holds an op not yet completed
	redo    bool // after a failed enter: to be run with pread/pwrite
}

// uring is an io_uring instance used by one caller at a time (mu): each Do
// or Stream call owns the ring and its OS thread until every op it
// submitted has completed.
type uring struct {
	mu sync.Mutex
	fd sys.FD

	sqMem, cqMem, sqeMem unsafe.Pointer
	sqLen, cqLen, sqeLen uintptr

	sqTail, cqHead       *uint32 // written by us
	sqHead, cqTail       *uint32 // written by the kernel
	sqMask, cqMask       uint32
	sqArray              []uint32
	sqes                 []uringSQE
	cqes                 []uringCQE
	localTail, localHead uint32

	broken   error                  // ops submitted before a failed io_uring_enter never completed
	fellBack atomic.Pointer[string] // why the engine now runs pread/pwrite
	regs     []regBuf
	fixedOps int // SQEs sent as READ_FIXED/WRITE_FIXED, for tests
	slots    []uringSlot
	free     []int
}

// newUring sets up a ring for queueDepth ops in flight and registers the
// arenas. reason is non-empty when registration failed and the ring runs
// with plain READ/WRITE.
func newUring(queueDepth int, arenas []*Arena) (*uring, string, error) {
	var p uringParams
	p.flags = ioringSetupClamp
	fd, err := uringSetup(uint32(queueDepth), &p)
	if err != nil {
		return nil, "", fmt.Errorf("io_uring_setup: %w", err)
	}
	u := &uring{fd: sys.Own(fd)}
	if err := u.mapRings(&p); err != nil {
		u.Close()
		return nil, "", err
	}
	qd := min(queueDepth, int(p.sqEntries))
	u.slots = make([]uringSlot, qd)
	u.free = make([]int, qd)
	for i := range u.free {
		u.free[i] = qd - 1 - i
	}
	reason := ""
	if err := u.register(arenas); err != nil {
		reason = err.Error() + "; io_uring runs with unregistered buffers"
	}
	return u, reason, nil
}

func (u *uring) mapRings(p *uringParams) error {
	u.sqLen = uintptr(p.sqOff.array) + uintptr(p.sqEntries)*4
	u.cqLen = uintptr(p.cqOff.cqes) + uintptr(p.cqEntries)*unsafe.Sizeof(uringCQE{})
	single := p.features&ioringFeatSingleMmap != 0
	if single {
		u.sqLen = max(u.sqLen, u.cqLen)
	}
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	var err error
	if u.sqMem, err = unix.MmapPtr(u.fd.Int(), ioringOffSQRing, nil, u.sqLen, prot, flags); err != nil {
		u.sqMem = nil
		return fmt.Errorf("io_uring: mmap SQ ring: %w", err)
	}
	if single {
		u.cqMem = u.sqMem
	} else if u.cqMem, err = unix.MmapPtr(u.fd.Int(), ioringOffCQRing, nil, u.cqLen, prot, flags); err != nil {
		u.cqMem = nil
		return fmt.Errorf("io_uring: mmap CQ ring: %w", err)
	}
	u.sqeLen = uintptr(p.sqEntries) * unsafe.Sizeof(uringSQE{})
	if u.sqeMem, err = unix.MmapPtr(u.fd.Int(), ioringOffSQEs, nil, u.sqeLen, prot, flags); err != nil {
		u.sqeMem = nil
		return fmt.Errorf("io_uring: mmap SQEs: %w", err)
	}
	sq := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(u.sqMem, off)) }
	cq := func(off uint32) *uint32 { return (*uint32)(unsafe.Add(u.cqMem, off)) }
	u.sqHead, u.sqTail = sq(p.sqOff.head), sq(p.sqOff.tail)
	u.sqMask = *sq(p.sqOff.ringMask)
	u.sqArray = unsafe.Slice(sq(p.sqOff.array), p.sqEntries)
	u.cqHead, u.cqTail = cq(p.cqOff.head), cq(p.cqOff.tail)
	u.cqMask = *cq(p.cqOff.ringMask)
	u.cqes = unsafe.Slice((*uringCQE)(unsafe.Add(u.cqMem, p.cqOff.cqes)), p.cqEntries)
	u.sqes = unsafe.Slice((*uringSQE)(u.sqeMem), p.sqEntries)
	u.localTail = atomic.LoadUint32(u.sqTail)
	u.localHead = atomic.LoadUint32(u.cqHead)
	return nil
}

// register hands the arenas to the kernel in pieces of at most 1 GiB, so
// that it pins them once instead of on every op.
func (u *uring) register(arenas []*Arena) error {
	var iov []unix.Iovec
	for _, a := range arenas {
		if a == nil {
			continue
		}
		mem := a.Bytes()
		for off := 0; off < len(mem); off += ioringMaxBufferSize {
			n := min(len(mem)-off, ioringMaxBufferSize)
			v := unix.Iovec{Base: &mem[off]}
			v.SetLen(n)
			iov = append(iov, v)
			u.regs = append(u.regs, regBuf{uintptr(unsafe.Pointer(&mem[off])), uintptr(n)})
		}
	}
	if len(iov) == 0 {
		return nil
	}
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(u.fd.Int()), ioringRegisterBuffers,
			uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)), 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			u.regs = nil
			err := fmt.Errorf("io_uring_register(BUFFERS): %w", errno)
			if errno == unix.ENOMEM {
				err = fmt.Errorf("%w (memlock limit too low: ulimit -l unlimited)", err)
			}
			return err
		}
		return nil
	}
}

// Name is "io_uring", or "pread/pwrite (io_uring failed)" once a failed
// io_uring_enter made the engine fall back (FallbackReason says why).
func (u *uring) Name() string {
	if u.fellBack.Load() != nil {
		return "pread/pwrite (io_uring failed)"
	}
	return "io_uring"
}

// FallbackReason is why the engine runs pread/pwrite now, "" while it runs
// io_uring.
func (u *uring) FallbackReason() string {
	if r := u.fellBack.Load(); r != nil {
		return *r
	}
	return ""
}

// Registered reports whether the arenas given to NewEngine are registered.
func (u *uring) Registered() bool { return len(u.regs) > 0 }

// QueueDepth is how many ops the ring keeps in flight.
func (u *uring) QueueDepth() int { return len(u.slots) }

func (u *uring) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.fd.Valid() {
		return nil
	}
	var errs []error
	if u.sqeMem != nil {
		errs = append(errs, unix.MunmapPtr(u.sqeMem, u.sqeLen))
	}
	if u.cqMem != nil && u.cqMem != u.sqMem {
		errs = append(errs, unix.MunmapPtr(u.cqMem, u.cqLen))
	}
	if u.sqMem != nil {
		errs = append(errs, unix.MunmapPtr(u.sqMem, u.sqLen))
	}
	errs = append(errs, u.fd.Close())
	u.sqMem, u.cqMem, u.sqeMem = nil, nil, nil
	u.sqes, u.cqes, u.sqArray = nil, nil, nil
	return errors.Join(errs...)
}

func (u *uring) Do(ops []Op) error {
	return u.Stream(len(ops),
		func(i int) Op { return ops[i] },
		func(i int, op *Op) { ops[i].N, ops[i].Err = op.N, op.Err })
}

// Stream keeps up to QueueDepth ops in flight, refilling a slot as soon as
// its completion is reaped. next and done run on the calling goroutine and
// must not call back into the engine.
func (u *uring) Stream(n int, next func(i int) Op, done func(i int, op *Op)) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.fd.Valid() {
		return errors.New("io_uring: engine is closed")
	}
	if u.broken != nil {
		return u.broken
	}
	if u.fellBack.Load() != nil {
		return preadEngine{}.Stream(n, next, done)
	}
	// Completions of file I/O are finished as task work of the submitting
	// thread; keeping one thread for the whole call means the thread that
	// waits is the one that runs it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	first, firstIdx := error(nil), -1
	complete := func(s int) {
		sl := &u.slots[s]
		done(sl.i, &sl.op)
		if sl.op.Err != nil && (firstIdx < 0 || sl.i < firstIdx) {
			first, firstIdx = sl.op.Err, sl.i
		}
		sl.op, sl.busy, sl.redo = Op{}, false, false
		u.free = append(u.free, s)
	}
	issued, inflight, pending := 0, 0, 0
	// After a failed enter: recover what is on the ring, then run the
	// rest of the stream with pread/pwrite.
	fallBack := func(cause error) error {
		if err := u.abandon(cause, complete); err != nil {
			u.broken = err
			return err
		}
		for ; issued < n; issued++ {
			op := next(issued)
			runOp(&op)
			done(issued, &op)
			if op.Err != nil && (firstIdx < 0 || issued < firstIdx) {
				first, firstIdx = op.Err, issued
			}
		}
		return first
	}
	for issued < n || inflight > 0 {
		for issued < n && len(u.free) > 0 {
			s := u.free[len(u.free)-1]
			u.free = u.free[:len(u.free)-1]
			sl := &u.slots[s]
			sl.i, sl.op, sl.retries, sl.busy = issued, next(issued), 0, true
			sl.op.N, sl.op.Err = 0, nil
			issued++
			if len(sl.op.Buf) == 0 {
				complete(s)
				continue
			}
			u.prep(s)
			pending++
			inflight++
			if len(sl.op.Buf) >= submitAloneBytes {
				if err := u.submit(&pending); err != nil {
					return fallBack(err)
				}
			}
		}
		if inflight == 0 {
			continue
		}
		if err := u.enter(&pending, inflight); err != nil {
			return fallBack(err)
		}
		head := u.localHead
		tail := atomic.LoadUint32(u.cqTail)
		for ; head != tail; head++ {
			c := u.cqes[head&u.cqMask]
			s := int(c.userData)
			if s < 0 || s >= len(u.slots) {
				continue // not ours: cannot happen on a private ring
			}
			if u.finish(s, c.res) {
				complete(s)
				inflight--
			} else {
				u.prep(s)
				pending++
			}
		}
		u.localHead = head
		atomic.StoreUint32(u.cqHead, head)
	}
	return first
}

// prep fills the next SQE for the rest of slot s's op and publishes it.
func (u *uring) prep(s int) {
	sl := &u.slots[s]
	op := &sl.op
	b := op.Buf[op.N:min(len(op.Buf), op.N+maxRW)]
	addr := uintptr(unsafe.Pointer(&b[0]))
	idx := u.localTail & u.sqMask
	sqe := &u.sqes[idx]
	*sqe = uringSQE{
		opcode:   ioringOpRead,
		fd:       int32(op.FD),
		off:      uint64(op.Off + int64(op.N)),
		addr:     uint64(addr),
		len:      uint32(len(b)),
		userData: uint64(s),
	}
	if op.Write {
		sqe.opcode = ioringOpWrite
	}
	for k, r := range u.regs {
		if addr >= r.base && addr+uintptr(len(b)) <= r.base+r.len {
			sqe.opcode = ioringOpReadFixed
			if op.Write {
				sqe.opcode = ioringOpWriteFixed
			}
			sqe.bufIndex = uint16(k)
			u.fixedOps++
			break
		}
	}
	u.sqArray[idx] = idx
	u.localTail++
	atomic.StoreUint32(u.sqTail, u.localTail)
}

// finish applies one completion to slot s; false means the op goes back on
// the ring for its remainder (short transfer) or another try (EINTR).
func (u *uring) finish(s int, res int32) bool {
	sl := &u.slots[s]
	op := &sl.op
	switch {
	case res < 0:
		errno := unix.Errno(-res)
		if (errno == unix.EINTR || errno == unix.EAGAIN) && sl.retries < ioringMaxRetries {
			sl.retries++
			return false
		}
		op.Err = opError(op, errno)
		return true
	case res == 0:
		op.Err = shortError(op)
		return true
	}
	op.N += int(res)
	if op.N >= len(op.Buf) {
		return true
	}
	if atDirectEOF(op) {
		op.Err = shortError(op)
		return true
	}
	return false
}

// submitAloneBytes: ops at least this large are submitted one per
// io_uring_enter as soon as they are ready. Submitted together, adjacent
// ops are merged by the block layer's plug into fewer, larger requests,
// which measured 20% slower here (1 MiB reads at QD32, virtio disk: 2050
// vs 2500 MiB/s); the extra syscall is nothing next to a 64 KiB transfer.
// Smaller ops are batched, where syscalls do count.
const submitAloneBytes = 64 << 10

// submit hands the pending SQEs to the kernel without waiting.
func (u *uring) submit(pending *int) error {
	for *pending > 0 {
		r, errno := uringEnter(u.fd.Int(), uint32(*pending), 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN || errno == unix.EBUSY:
			return nil // enter will wait for completions and retry
		case errno != 0:
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		if r == 0 {
			return nil
		}
		*pending -= int(r)
	}
	return nil
}

// enter submits the pending SQEs and waits for at least one completion;
// the caller has at least one op in flight.
func (u *uring) enter(pending *int, inflight int) error {
	for attempt := 0; ; attempt++ {
		r, errno := uringEnter(u.fd.Int(), uint32(*pending), 1, ioringEnterGetevents)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN || errno == unix.EBUSY:
			// Out of kernel resources for now: wait for what is already
			// in flight, else try again a little later.
			if attempt >= ioringMaxEnterAttempts {
				return fmt.Errorf("io_uring_enter: %w", errno)
			}
			if inflight > *pending {
				_, errno = uringEnter(u.fd.Int(), 0, 1, ioringEnterGetevents)
				if errno != 0 && errno != unix.EINTR {
					return fmt.Errorf("io_uring_enter: %w", errno)
				}
				return nil
			}
			runtime.Gosched()
			continue
		case errno != 0:
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		*pending -= int(r)
		if *pending > 0 {
			continue // submitted only part; the kernel did not wait
		}
		return nil
	}
}

// abandon recovers from a failed io_uring_enter: it takes back the SQEs
// the kernel never consumed, waits for the ops it did take (their buffers
// are in use until they complete), runs the rest with pread/pwrite, and
// switches the engine to pread/pwrite for good, saying why in the log.
// It fails only if submitted ops never complete.
func (u *uring) abandon(cause error, complete func(s int)) error {
	head := atomic.LoadUint32(u.sqHead)
	for t := head; t != u.localTail; t++ {
		u.slots[u.sqes[t&u.sqMask].userData].redo = true
	}
	u.localTail = head
	atomic.StoreUint32(u.sqTail, head)
	waiting := 0
	for s := range u.slots {
		if u.slots[s].busy && !u.slots[s].redo {
			waiting++
		}
	}
	deadline := time.Now().Add(uringDrainTimeout)
	for waiting > 0 {
		head := u.localHead
		for tail := atomic.LoadUint32(u.cqTail); head != tail; head++ {
			c := u.cqes[head&u.cqMask]
			s := int(c.userData)
			if s < 0 || s >= len(u.slots) || !u.slots[s].busy || u.slots[s].redo {
				continue
			}
			waiting--
			if u.finish(s, c.res) {
				complete(s)
			} else {
				u.slots[s].redo = true // a short transfer: redo it whole
			}
		}
		u.localHead = head
		atomic.StoreUint32(u.cqHead, head)
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (and %d ops submitted before it never completed)", cause, waiting)
		}
		// Completions of file I/O are posted as task work of this thread,
		// which runs on the way out of any system call.
		unix.Nanosleep(&unix.Timespec{Nsec: 50_000}, nil)
	}
	for s := range u.slots {
		if sl := &u.slots[s]; sl.busy && sl.redo {
			runOp(&sl.op)
			complete(s)
		}
	}
	reason := cause.Error()
	u.fellBack.Store(&reason)
	engineLogf("hw: %s; this engine runs pread/pwrite from now on", reason)
	return nil
}

// FixedOps reports whether e is an io_uring with registered buffers and how
// many reads and writes it sent as fixed-buffer ops (tests check that pool
// memory really takes the registered path).
func FixedOps(e Engine) (registered bool, n int) {
	u, ok := e.(*uring)
	if !ok {
		return false, 0
	}
	return u.Registered(), u.fixedOps
}
