//go:build linux && (amd64 || arm64)

package rdma

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"kvsim/hw/internal/sys"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/unix"
)

// api is the part of libibverbs kvsim calls by symbol. Handles are the
// library's pointers, never Go memory; buffers the call only reads or
// fills during the call are slices.
type api struct {
	getDeviceList  func(n *int32) unsafe.Pointer
	freeDeviceList func(list unsafe.Pointer)
	getDeviceName  func(dev unsafe.Pointer) string
	openDevice     func(dev unsafe.Pointer) unsafe.Pointer
	closeDevice    func(ctx unsafe.Pointer) int32
	queryDevice    func(ctx unsafe.Pointer, attr []byte) int32
	queryPort      func(ctx unsafe.Pointer, port uint8, attr []byte) int32
	queryGID       func(ctx unsafe.Pointer, port uint8, index int32, gid []byte) int32
	allocPD        func(ctx unsafe.Pointer) unsafe.Pointer
	deallocPD      func(pd unsafe.Pointer) int32
	regMR          func(pd unsafe.Pointer, addr uintptr, n uintptr, access int32) unsafe.Pointer
	deregMR        func(mr unsafe.Pointer) int32
	createCQ       func(ctx unsafe.Pointer, cqe int32, cqCtx, channel unsafe.Pointer, vector int32) unsafe.Pointer
	destroyCQ      func(cq unsafe.Pointer) int32
	createQP       func(pd unsafe.Pointer, attr []byte) unsafe.Pointer
	modifyQP       func(qp unsafe.Pointer, attr []byte, mask int32) int32
	destroyQP      func(qp unsafe.Pointer) int32
	wcStatusStr    func(status int32) string // optional
	errnoLocation  func() *int32             // libc's, for the calls that report by errno
}

// Lib is a loaded libibverbs. A library is never unloaded: providers it
// loads register destructors.
type Lib struct {
	path string
	api  api
}

var (
	libsMu sync.Mutex
	libs   = map[string]*Lib{}
)

// Load loads $KVSIM_IBVERBS, else libibverbs.so.1 from the loader's path.
func Load() (*Lib, error) {
	p := os.Getenv("KVSIM_IBVERBS")
	if p == "" {
		p = LibName
	}
	return LoadPath(p)
}

// LoadPath loads the library at path (a bare name goes through the
// loader's search).
func LoadPath(path string) (*Lib, error) {
	libsMu.Lock()
	defer libsMu.Unlock()
	if l := libs[path]; l != nil {
		return l, nil
	}
	// dlerror is per OS thread: read it on the thread that called dlopen.
	runtime.LockOSThread()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	runtime.UnlockOSThread()
	if err != nil {
		return nil, errorOf(ErrNoLibrary, "rdma: cannot load %s (%v): %s", path, strings.TrimSpace(err.Error()), installHint)
	}
	l := &Lib{path: path}
	a := &l.api
	for _, b := range []struct {
		fn       any
		name     string
		optional bool
	}{
		{&a.getDeviceList, "ibv_get_device_list", false},
		{&a.freeDeviceList, "ibv_free_device_list", false},
		{&a.getDeviceName, "ibv_get_device_name", false},
		{&a.openDevice, "ibv_open_device", false},
		{&a.closeDevice, "ibv_close_device", false},
		{&a.queryDevice, "ibv_query_device", false},
		{&a.queryPort, "ibv_query_port", false},
		{&a.queryGID, "ibv_query_gid", false},
		{&a.allocPD, "ibv_alloc_pd", false},
		{&a.deallocPD, "ibv_dealloc_pd", false},
		{&a.regMR, "ibv_reg_mr", false},
		{&a.deregMR, "ibv_dereg_mr", false},
		{&a.createCQ, "ibv_create_cq", false},
		{&a.destroyCQ, "ibv_destroy_cq", false},
		{&a.createQP, "ibv_create_qp", false},
		{&a.modifyQP, "ibv_modify_qp", false},
		{&a.destroyQP, "ibv_destroy_qp", false},
		{&a.wcStatusStr, "ibv_wc_status_str", true},
	} {
		// Look the symbol up first: RegisterLibFunc panics on a miss.
		addr, err := purego.Dlsym(h, b.name)
		if err != nil || addr == 0 {
			if b.optional {
				continue
			}
			return nil, fmt.Errorf("rdma: %w: %s loaded, but symbol %s is missing: %s", ErrNoLibrary, path, b.name, installHint)
		}
		purego.RegisterFunc(b.fn, addr)
	}
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("rdma: loading libc for errno: %v", err)
	}
	addr, err := purego.Dlsym(libc, "__errno_location")
	if err != nil {
		return nil, fmt.Errorf("rdma: libc has no __errno_location: %v", err)
	}
	purego.RegisterFunc(&a.errnoLocation, addr)
	libs[path] = l
	return l, nil
}

// Path is where the library was loaded from.
func (l *Lib) Path() string {
	if !strings.Contains(l.path, "/") {
		if p := sys.LoadedLib(l.path); p != "" {
			return p
		}
	}
	return l.path
}

// errnoCall runs f on a locked OS thread and returns its result with the
// errno it left: libibverbs reports NULL returns through errno, which is
// per thread.
func errnoCall[T any](l *Lib, f func() T) (T, syscall.Errno) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	*l.api.errnoLocation() = 0
	v := f()
	return v, syscall.Errno(*l.api.errnoLocation())
}

// errnoText renders an errno, "unknown error" when the library set none.
func errnoText(e syscall.Errno) string {
	if e == 0 {
		return "failed without setting errno"
	}
	return fmt.Sprintf("%v (%s)", e, unix.ErrnoName(e))
}

// deviceList calls ibv_get_device_list; free the list with freeDeviceList.
func (l *Lib) deviceList() (unsafe.Pointer, []unsafe.Pointer, error) {
	var n int32
	list, e := errnoCall(l, func() unsafe.Pointer { return l.api.getDeviceList(&n) })
	if list == nil {
		// ENOSYS: no kernel support (no RDMA driver, no ib_uverbs).
		return nil, nil, errorOf(ErrNoDevice, "rdma: %s loaded from %s, but ibv_get_device_list fails with %s: no RDMA device or kernel support (no NIC, no soft-RoCE link: rdma link add rxe0 type rxe netdev IFACE)",
			LibName, l.Path(), errnoText(e))
	}
	return list, unsafe.Slice((*unsafe.Pointer)(list), n), nil
}

// Devices lists every device with its attributes and ports.
func (l *Lib) Devices() ([]DeviceInfo, error) {
	list, devs, err := l.deviceList()
	if err != nil {
		return nil, err
	}
	defer l.api.freeDeviceList(list)
	out := make([]DeviceInfo, 0, len(devs))
	for _, dev := range devs {
		info := DeviceInfo{Name: l.api.getDeviceName(dev)}
		ctx, e := errnoCall(l, func() unsafe.Pointer { return l.api.openDevice(dev) })
		if ctx == nil {
			info.Err = "ibv_open_device: " + errnoText(e)
			out = append(out, info)
			continue
		}
		l.query(ctx, &info)
		l.api.closeDevice(ctx)
		out = append(out, info)
	}
	return out, nil
}

// query fills info from an open context.
func (l *Lib) query(ctx unsafe.Pointer, info *DeviceInfo) {
	attr := make([]byte, devAttrSize)
	if rc := l.api.queryDevice(ctx, attr); rc != 0 {
		info.Err = "ibv_query_device: " + errnoText(syscall.Errno(rc))
		return
	}
	ne := binary.NativeEndian
	info.FW = string(attr[:bytes.IndexByte(append(attr[:64:64], 0), 0)])
	info.MaxMRSize = ne.Uint64(attr[devAttrMaxMR:])
	info.MaxQPWR = int(int32(ne.Uint32(attr[devAttrMaxQPWR:])))
	info.MaxSGE = int(int32(ne.Uint32(attr[devAttrMaxSGE:])))
	info.MaxCQE = int(int32(ne.Uint32(attr[devAttrMaxCQE:])))
	info.MaxRdAtom = int(int32(ne.Uint32(attr[devAttrRdAtom:])))
	info.InitRd = int(int32(ne.Uint32(attr[devAttrInitRd:])))
	for port := 1; port <= int(attr[devAttrPorts]); port++ {
		p := PortInfo{Num: port}
		pa := make([]byte, portAttrSize)
		if rc := l.api.queryPort(ctx, uint8(port), pa); rc != 0 {
			p.Err = "ibv_query_port: " + errnoText(syscall.Errno(rc))
			info.Ports = append(info.Ports, p)
			continue
		}
		p.State = portStateName(int(ne.Uint32(pa[portAttrState:])))
		p.mtuCode = uint8(ne.Uint32(pa[portAttrActiveMTU:]))
		p.MTU = mtuBytes(int(p.mtuCode))
		p.gidTbl = int(int32(ne.Uint32(pa[portAttrGIDTbl:])))
		p.LID = ne.Uint16(pa[portAttrLID:])
		p.LinkLayer = linkLayerName(int(pa[portAttrLinkLayer]))
		if p.gidTbl > 0 {
			if rc := l.api.queryGID(ctx, uint8(port), 0, p.GID[:]); rc != 0 {
				p.Err = "ibv_query_gid: failed"
			}
		}
		info.Ports = append(info.Ports, p)
	}
}

// ProbeVerbs loads the library and lists its devices; Err says, in one
// line, why the verbs path is off (no library, no device, no active port).
func ProbeVerbs() Probe {
	l, err := Load()
	if err != nil {
		return Probe{Err: err}
	}
	p := Probe{Lib: l.Path()}
	p.Devices, err = l.Devices()
	switch {
	case err != nil:
		p.Err = err
	case len(p.Devices) == 0:
		p.Err = errorOf(ErrNoDevice, "rdma: %s loaded from %s, but it sees no device (no RDMA NIC, no soft-RoCE link: rdma link add rxe0 type rxe netdev IFACE)", LibName, p.Lib)
	default:
		p.Err = noActivePort(p.Devices)
	}
	return p
}

// noActivePort is nil when some port is ACTIVE.
func noActivePort(devs []DeviceInfo) error {
	for _, d := range devs {
		for _, p := range d.Ports {
			if p.Active() {
				return nil
			}
		}
	}
	return errorOf(ErrPortDown, "no port is ACTIVE (check the cable and switch, the subnet manager on InfiniBand, `ip link` on RoCE)")
}

// Device is an open device context with one protection domain, on one
// port.
type Device struct {
	lib      *Lib
	info     DeviceInfo
	port     PortInfo
	ctx, pd  unsafe.Pointer
	postSend uintptr // ctx->ops.post_send
	pollCQ   uintptr // ctx->ops.poll_cq
	opts     Options
	mu       sync.Mutex
	closed   bool
}

// Open opens a device, checks its port is ACTIVE and allocates a
// protection domain.
func (l *Lib) Open(o Options) (*Device, error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	list, devs, err := l.deviceList()
	if err != nil {
		return nil, err
	}
	defer l.api.freeDeviceList(list)
	if len(devs) == 0 {
		return nil, errorOf(ErrNoDevice, "rdma: %s sees no device (no RDMA NIC, no soft-RoCE link)", l.Path())
	}
	var why []string
	down := 0
	for _, dev := range devs {
		name := l.api.getDeviceName(dev)
		if o.Device != "" && name != o.Device {
			continue
		}
		d, err := l.openOne(dev, name, o)
		if err == nil {
			return d, nil
		}
		if o.Device != "" {
			return nil, err
		}
		if errors.Is(err, ErrPortDown) {
			down++
		}
		why = append(why, strings.TrimPrefix(err.Error(), "rdma: "))
	}
	if o.Device != "" {
		return nil, fmt.Errorf("rdma: %w: no device named %q", ErrNoDevice, o.Device)
	}
	if down == len(why) {
		return nil, fmt.Errorf("rdma: %w on any device: %s", ErrPortDown, strings.Join(why, "; "))
	}
	return nil, fmt.Errorf("rdma: %w usable: %s", ErrNoDevice, strings.Join(why, "; "))
}

func (l *Lib) openOne(dev unsafe.Pointer, name string, o Options) (*Device, error) {
	ctx, e := errnoCall(l, func() unsafe.Pointer { return l.api.openDevice(dev) })
	if ctx == nil {
		return nil, fmt.Errorf("rdma: ibv_open_device %s: %s", name, errnoText(e))
	}
	d := &Device{lib: l, ctx: ctx, opts: o, info: DeviceInfo{Name: name}}
	fail := func(err error) (*Device, error) {
		l.api.closeDevice(ctx)
		return nil, err
	}
	l.query(ctx, &d.info)
	if d.info.Err != "" {
		return fail(fmt.Errorf("rdma: %s: %s", name, d.info.Err))
	}
	found := false
	for _, p := range d.info.Ports {
		if (o.Port == 0 && p.Active()) || p.Num == o.Port {
			d.port, found = p, true
			break
		}
	}
	if !found && o.Port == 0 && len(d.info.Ports) > 0 {
		d.port, found = d.info.Ports[0], true // none active: say why the first is not
	}
	switch {
	case !found:
		return fail(fmt.Errorf("rdma: %s has no port %d (it has %d)", name, o.Port, len(d.info.Ports)))
	case d.port.Err != "":
		return fail(fmt.Errorf("rdma: %s port %d: %s", name, d.port.Num, d.port.Err))
	case !d.port.Active():
		return fail(fmt.Errorf("rdma: %s port %d is %s: %w (check the cable and switch, the subnet manager on InfiniBand, `ip link` on RoCE)", name, d.port.Num, d.port.State, ErrPortDown))
	}
	if o.GIDIndex != 0 {
		if o.GIDIndex < 0 || o.GIDIndex >= d.port.gidTbl || l.api.queryGID(ctx, uint8(d.port.Num), int32(o.GIDIndex), d.port.GID[:]) != 0 {
			return fail(fmt.Errorf("rdma: %s port %d: no GID index %d (the table has %d)", name, d.port.Num, o.GIDIndex, d.port.gidTbl))
		}
	}
	d.postSend = *(*uintptr)(unsafe.Add(ctx, ctxPostSend))
	d.pollCQ = *(*uintptr)(unsafe.Add(ctx, ctxPollCQ))
	if d.postSend == 0 || d.pollCQ == 0 {
		return fail(fmt.Errorf("rdma: %s: the context's ops table has no post_send/poll_cq (a provider this ABI does not match)", name))
	}
	pd, e := errnoCall(l, func() unsafe.Pointer { return l.api.allocPD(ctx) })
	if pd == nil {
		return fail(fmt.Errorf("rdma: ibv_alloc_pd on %s: %s", name, errnoText(e)))
	}
	d.pd = pd
	return d, nil
}

// Info is the device's attributes; Port the port in use.
func (d *Device) Info() DeviceInfo { return d.info }
func (d *Device) Port() PortInfo   { return d.port }

// Close frees the protection domain and closes the context; regions and
// queue pairs must be closed first.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	if rc := d.lib.api.deallocPD(d.pd); rc != 0 {
		// Left open: closing the context under live objects would leak them.
		return fmt.Errorf("rdma: ibv_dealloc_pd: %s (a region or queue pair still uses it)", errnoText(syscall.Errno(rc)))
	}
	d.closed = true
	if rc := d.lib.api.closeDevice(d.ctx); rc != 0 {
		return fmt.Errorf("rdma: ibv_close_device: %s", errnoText(syscall.Errno(rc)))
	}
	return nil
}

// Region is a buffer registered for remote access, as one or more memory
// regions of at most the device's max_mr_size each.
type Region struct {
	dev  *Device
	base uintptr
	n    int
	mrs  []mrChunk
}

type mrChunk struct {
	mr         unsafe.Pointer
	addr, n    uintptr
	lkey, rkey uint32
}

// Register registers buf for local writes and remote reads and writes.
// The NIC reads and writes buf after the call returns, so buf must not be
// Go heap memory: pass memory from mmap (the DRAM pool's mapping) and keep
// it mapped until the region is closed.
func (d *Device) Register(buf []byte) (*Region, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("rdma: registering an empty buffer")
	}
	step := uint64(len(buf))
	if m := d.info.MaxMRSize; m > 0 && m < step {
		step = m
	}
	r := &Region{dev: d, base: uintptr(unsafe.Pointer(&buf[0])), n: len(buf)}
	access := int32(accessLocalWrite | accessRemoteWrite | accessRemoteRead)
	for off := uint64(0); off < uint64(len(buf)); off += step {
		n := min(step, uint64(len(buf))-off)
		addr := r.base + uintptr(off)
		mr, e := errnoCall(d.lib, func() unsafe.Pointer { return d.lib.api.regMR(d.pd, addr, uintptr(n), access) })
		if mr == nil {
			what := fmt.Sprintf("rdma: ibv_reg_mr of %s at offset %s (memory region %d of %d, max MR %s)", formatBytes(n), formatBytes(off), len(r.mrs)+1, (uint64(len(buf))+step-1)/step, formatBytes(d.info.MaxMRSize))
			r.Close()
			if e == unix.ENOMEM || e == unix.EPERM || e == unix.EAGAIN {
				return nil, fmt.Errorf("%s: %s: %w (RLIMIT_MEMLOCK %s): %s", what, errnoText(e), ErrMemlock, memlockLimit(), memlockFix)
			}
			return nil, fmt.Errorf("%s: %s", what, errnoText(e))
		}
		r.mrs = append(r.mrs, mrChunk{
			mr:   mr,
			addr: *(*uintptr)(unsafe.Add(mr, mrAddr)),
			n:    *(*uintptr)(unsafe.Add(mr, mrLen)),
			lkey: *(*uint32)(unsafe.Add(mr, mrLKey)),
			rkey: *(*uint32)(unsafe.Add(mr, mrRKey)),
		})
	}
	return r, nil
}

func memlockLimit() string {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) != nil {
		return "unknown"
	}
	if rl.Cur == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return formatBytes(rl.Cur)
}

// MRs is how many memory regions the buffer took.
func (r *Region) MRs() int { return len(r.mrs) }

// Remote is what a peer needs to read and write the region.
func (r *Region) Remote() []RemoteMR {
	out := make([]RemoteMR, len(r.mrs))
	for i, m := range r.mrs {
		out[i] = RemoteMR{Addr: uint64(m.addr), Len: uint64(m.n), RKey: m.rkey}
	}
	return out
}

// Close deregisters every memory region.
func (r *Region) Close() error {
	var errs []error
	for _, m := range r.mrs {
		if rc := r.dev.lib.api.deregMR(m.mr); rc != 0 {
			errs = append(errs, fmt.Errorf("rdma: ibv_dereg_mr: %s", errnoText(syscall.Errno(rc))))
		}
	}
	r.mrs = nil
	return errors.Join(errs...)
}

// chunk finds the memory region holding local address a.
func (r *Region) chunk(a uintptr) int {
	for i, m := range r.mrs {
		if a >= m.addr && a < m.addr+m.n {
			return i
		}
	}
	return -1
}

// Work requests go out in batches of at most maxBatch, from a scratch page
// outside the Go heap that holds the requests, their scatter entries and
// the completions.
const (
	maxBatch   = 16
	scratchWR  = 0
	scratchSGE = scratchWR + maxBatch*wrSize
	scratchWC  = scratchSGE + maxBatch*sgeSize
	scratchBad = scratchWC + maxBatch*wcSize
	scratchLen = scratchBad + ptrSize
	maxPiece   = 1 << 30 // one work request moves at most this (sge.length is 32 bits)
)

// QP is a reliable-connected queue pair with its completion queue; one
// transfer runs at a time.
type QP struct {
	dev     *Device
	cq, qp  unsafe.Pointer
	local   Endpoint
	batch   int
	scratch []byte
	args    [3]uintptr // post_send's and poll_cq's arguments
	mu      sync.Mutex
}

// NewQP creates a completion queue and an RC queue pair of depth work
// requests, and moves it to INIT.
func (d *Device) NewQP(depth int) (*QP, error) {
	depth = max(1, min(depth, maxBatch))
	if d.info.MaxQPWR > 0 {
		depth = min(depth, d.info.MaxQPWR)
	}
	if d.info.MaxCQE > 0 {
		depth = min(depth, d.info.MaxCQE)
	}
	l := d.lib
	q := &QP{dev: d, batch: depth}
	var e syscall.Errno
	q.cq, e = errnoCall(l, func() unsafe.Pointer { return l.api.createCQ(d.ctx, int32(depth), nil, nil, 0) })
	if q.cq == nil {
		return nil, fmt.Errorf("rdma: ibv_create_cq of %d entries: %s", depth, errnoText(e))
	}
	ia := make([]byte, qpInitSize)
	ne := binary.NativeEndian
	ne.PutUint64(ia[qpInitSendCQ:], uint64(uintptr(q.cq)))
	ne.PutUint64(ia[qpInitRecvCQ:], uint64(uintptr(q.cq)))
	ne.PutUint32(ia[qpInitCap+qpCapSendWR:], uint32(depth))
	ne.PutUint32(ia[qpInitCap+qpCapRecvWR:], 1)
	ne.PutUint32(ia[qpInitCap+qpCapSendSGE:], 1)
	ne.PutUint32(ia[qpInitCap+qpCapRecvSGE:], 1)
	ne.PutUint32(ia[qpInitType:], qptRC)
	q.qp, e = errnoCall(l, func() unsafe.Pointer { return l.api.createQP(d.pd, ia) })
	if q.qp == nil {
		l.api.destroyCQ(q.cq)
		if e == unix.ENOMEM {
			return nil, fmt.Errorf("rdma: ibv_create_qp: %s: %w: %s", errnoText(e), ErrMemlock, memlockFix)
		}
		return nil, fmt.Errorf("rdma: ibv_create_qp: %s", errnoText(e))
	}
	q.local = Endpoint{
		QPN:  *(*uint32)(unsafe.Add(q.qp, qpNum)),
		PSN:  rand.Uint32() & 0xffffff,
		LID:  d.port.LID,
		Port: uint8(d.port.Num),
		MTU:  d.port.mtuCode,
		GID:  d.port.GID,
	}
	if err := q.modify(qpsInit, maskToInit, func(a []byte) {
		ne.PutUint16(a[qpAttrPKeyIndex:], 0)
		a[qpAttrPortNum] = uint8(d.port.Num)
		ne.PutUint32(a[qpAttrAccess:], accessLocalWrite|accessRemoteWrite|accessRemoteRead)
	}); err != nil {
		q.Close()
		return nil, err
	}
	b, err := unix.Mmap(-1, 0, scratchLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("rdma: mapping the work-request page: %w", err)
	}
	q.scratch = b
	return q, nil
}

// Endpoint is what the peer needs to connect to this queue pair.
func (q *QP) Endpoint() Endpoint { return q.local }

// State is the queue pair's state as the library last recorded it.
func (q *QP) State() string {
	if q.qp == nil {
		return "closed"
	}
	return qpStateName(int(*(*uint32)(unsafe.Add(q.qp, qpState))))
}

// modify calls ibv_modify_qp with the attributes fill sets.
func (q *QP) modify(state, mask int, fill func(a []byte)) error {
	a := make([]byte, qpAttrSize)
	binary.NativeEndian.PutUint32(a[qpAttrState:], uint32(state))
	if fill != nil {
		fill(a)
	}
	if rc := q.dev.lib.api.modifyQP(q.qp, a, int32(mask)); rc != 0 {
		return fmt.Errorf("rdma: ibv_modify_qp %s -> %s: %s", q.State(), qpStateName(state), errnoText(syscall.Errno(rc)))
	}
	return nil
}

// Connect moves the queue pair INIT -> RTR -> RTS towards the peer's.
func (q *QP) Connect(r Endpoint) error {
	d := q.dev
	ne := binary.NativeEndian
	rd := func(n int) uint8 { return uint8(max(1, min(n, 16))) }
	if err := q.modify(qpsRTR, maskToRTR, func(a []byte) {
		ne.PutUint32(a[qpAttrPathMTU:], uint32(min(q.local.MTU, r.MTU)))
		ne.PutUint32(a[qpAttrDestQPN:], r.QPN)
		ne.PutUint32(a[qpAttrRqPSN:], r.PSN)
		a[qpAttrMaxDestRd] = rd(d.info.MaxRdAtom)
		a[qpAttrMinRNRTimer] = 12 // 0.64 ms
		ah := a[qpAttrAH:]
		ah[ahPortNum] = uint8(d.port.Num)
		if d.port.LinkLayer == linkLayerName(linkLayerEth) || r.LID == 0 {
			// RoCE (and routed IB): address by GID.
			ah[ahIsGlobal] = 1
			copy(ah[ahGRHDGID:ahGRHDGID+16], r.GID[:])
			ah[ahGRHSGIDIndex] = uint8(d.opts.GIDIndex)
			ah[ahGRHHopLimit] = 64
		} else {
			ne.PutUint16(ah[ahDLID:], r.LID)
		}
	}); err != nil {
		return err
	}
	return q.modify(qpsRTS, maskToRTS, func(a []byte) {
		a[qpAttrTimeout] = 14 // 4.096 us * 2^14 = 67 ms per retry
		a[qpAttrRetryCnt] = 7
		a[qpAttrRNRRetry] = 7
		ne.PutUint32(a[qpAttrSqPSN:], q.local.PSN)
		a[qpAttrMaxRdAtomic] = rd(d.info.InitRd)
	})
}

// Close destroys the queue pair and its completion queue.
func (q *QP) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var errs []error
	if q.qp != nil {
		if rc := q.dev.lib.api.destroyQP(q.qp); rc != 0 {
			errs = append(errs, fmt.Errorf("rdma: ibv_destroy_qp: %s", errnoText(syscall.Errno(rc))))
		}
		q.qp = nil
	}
	if q.cq != nil {
		if rc := q.dev.lib.api.destroyCQ(q.cq); rc != 0 {
			errs = append(errs, fmt.Errorf("rdma: ibv_destroy_cq: %s", errnoText(syscall.Errno(rc))))
		}
		q.cq = nil
	}
	if q.scratch != nil {
		errs = append(errs, unix.Munmap(q.scratch))
		q.scratch = nil
	}
	return errors.Join(errs...)
}

// transfer moves len(buf) bytes between buf (inside local) and the peer's
// regions at offset off of their concatenation: RDMA READ into buf, or
// RDMA WRITE from it. Pieces are cut at both sides' memory-region
// boundaries and posted signaled, maxBatch at a time; it returns when
// every one has completed.
func (q *QP) transfer(op int, local *Region, buf []byte, remote []RemoteMR, off uint64) error {
	if len(buf) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(&buf[0]))
	if base < local.base || base+uintptr(len(buf)) > local.base+uintptr(local.n) {
		return fmt.Errorf("rdma: a %d-byte buffer outside the registered region", len(buf))
	}
	var total uint64
	for _, m := range remote {
		total += m.Len
	}
	if off > total || uint64(len(buf)) > total-off {
		return fmt.Errorf("rdma: %d bytes at offset %d: beyond the peer's %d registered bytes", len(buf), off, total)
	}
	ri := 0
	for off >= remote[ri].Len {
		off -= remote[ri].Len
		ri++
	}
	li := local.chunk(base)
	if li < 0 {
		return fmt.Errorf("rdma: the local region is closed")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.qp == nil {
		return fmt.Errorf("rdma: queue pair closed")
	}
	ne := binary.NativeEndian
	s := q.scratch
	sbase := uintptr(unsafe.Pointer(&s[0]))
	posted := 0
	for n := uintptr(len(buf)); n > 0; {
		lc, rc := local.mrs[li], remote[ri]
		piece := min(n, lc.addr+lc.n-base, uintptr(rc.Len-off), maxPiece)
		wr := s[scratchWR+posted*wrSize : scratchWR+(posted+1)*wrSize]
		sge := s[scratchSGE+posted*sgeSize : scratchSGE+(posted+1)*sgeSize]
		clear(wr)
		ne.PutUint64(wr[wrID:], uint64(posted))
		ne.PutUint64(wr[wrSGList:], uint64(sbase+uintptr(scratchSGE+posted*sgeSize)))
		ne.PutUint32(wr[wrNumSGE:], 1)
		ne.PutUint32(wr[wrOpcode:], uint32(op))
		ne.PutUint32(wr[wrSendFlags:], sendSignal)
		ne.PutUint64(wr[wrRemoteAddr:], rc.Addr+off)
		ne.PutUint32(wr[wrRKey:], rc.RKey)
		ne.PutUint64(sge[sgeAddr:], uint64(base))
		ne.PutUint32(sge[sgeLength:], uint32(piece))
		ne.PutUint32(sge[sgeLKey:], lc.lkey)
		if posted > 0 {
			ne.PutUint64(s[scratchWR+(posted-1)*wrSize+wrNext:], uint64(sbase+uintptr(scratchWR+posted*wrSize)))
		}
		posted++
		base, n, off = base+piece, n-piece, off+uint64(piece)
		if base == lc.addr+lc.n {
			li++
		}
		if off == rc.Len {
			ri, off = ri+1, 0
		}
		if posted == q.batch || n == 0 {
			if err := q.postAndWait(posted); err != nil {
				return err
			}
			posted = 0
		}
	}
	runtime.KeepAlive(buf)
	return nil
}

// postAndWait posts the chain of n requests at the start of the scratch
// page and polls until all n have completed, through the context's
// post_send and poll_cq pointers (static inline in verbs.h: no symbol).
func (q *QP) postAndWait(n int) error {
	sbase := uintptr(unsafe.Pointer(&q.scratch[0]))
	// The arguments go in the QP's own array: a variadic list built here
	// would be allocated on every call.
	q.args = [3]uintptr{uintptr(q.qp), sbase + scratchWR, sbase + scratchBad}
	r1, _, _ := purego.SyscallN(q.dev.postSend, q.args[:]...)
	if rc := int32(r1); rc != 0 {
		return fmt.Errorf("rdma: ibv_post_send of %d requests: %s", n, errnoText(syscall.Errno(rc)))
	}
	deadline := time.Now().Add(q.dev.opts.Timeout)
	var first error
	for got, idle := 0, 0; got < n; {
		q.args = [3]uintptr{uintptr(q.cq), uintptr(n - got), sbase + scratchWC}
		r1, _, _ := purego.SyscallN(q.dev.pollCQ, q.args[:]...)
		c := int32(r1)
		if c < 0 {
			return fmt.Errorf("rdma: ibv_poll_cq: error %d", c)
		}
		for i := range int(c) {
			wc := q.scratch[scratchWC+i*wcSize:]
			if st := int32(binary.NativeEndian.Uint32(wc[wcStatus:])); st != 0 && first == nil {
				first = fmt.Errorf("rdma: work request %d completed with %s (status %d, vendor error %#x); the queue pair is now in error: reconnect",
					binary.NativeEndian.Uint64(wc[wcID:]), q.statusText(st), st, binary.NativeEndian.Uint32(wc[wcVendorErr:]))
			}
		}
		got += int(c)
		if c > 0 {
			idle = 0
			continue
		}
		if idle++; idle%1024 == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("rdma: %d of %d completions after %v: the peer or the fabric is gone", got, n, q.dev.opts.Timeout)
			}
			runtime.Gosched()
		}
	}
	return first
}

func (q *QP) statusText(st int32) string {
	if q.dev.lib.api.wcStatusStr != nil {
		return q.dev.lib.api.wcStatusStr(st)
	}
	return "an error"
}
