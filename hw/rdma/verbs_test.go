//go:build linux && (amd64 || arm64)

package rdma

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kvsim/hw/rdma/rdmatest"
	"kvsim/internal/testenv"
)

// useFake points the loader at the fake library with the given settings
// (every FAKE_IBV_ variable not given is cleared) and returns it loaded.
func useFake(t *testing.T, env map[string]string) *Lib {
	t.Helper()
	p := rdmatest.Use(t, env)
	l, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if l.Path() != p {
		t.Fatalf("loaded %s, want the fake %s", l.Path(), p)
	}
	return l
}

// checkFreed fails if the fake holds more objects than before: every
// list, context, PD, MR, CQ and QP kvsim made must be freed.
func checkFreed(t *testing.T) {
	t.Helper()
	live := fakeCall[func() int32](t, "fake_live")
	before := live()
	t.Cleanup(func() {
		if n := live(); n != before {
			t.Errorf("%d verbs objects not freed", n-before)
		}
	})
}

// mapped is n bytes outside the Go heap, as the DRAM pool's are.
func mapped(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// TestABIOffsets: every offset and size abi.go relies on equals what the
// C compiler makes of verbs.h's declarations (copied field for field into
// the fake), including the ops-table slots of post_send and poll_cq.
func TestABIOffsets(t *testing.T) {
	checkOffsets(t, fakeCall[func(string) int64](t, "fake_offset"))
}

// TestABIOffsetsRealHeader does the same against the installed
// <infiniband/verbs.h> (Debian's libibverbs-dev), where there is one.
func TestABIOffsetsRealHeader(t *testing.T) {
	buildFakeVerbs(t)
	lib, err := compileFake("liboffsets.so", "-DREAL_VERBS_H", "-DOFFSETS_ONLY")
	if err != nil {
		if strings.Contains(err.Error(), "infiniband/verbs.h: No such file") {
			testenv.Missing(t, "no <infiniband/verbs.h> here (Debian: libibverbs-dev)")
		}
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Dir(lib))
	checkOffsets(t, libCall[func(string) int64](t, lib, "fake_offset"))
}

func checkOffsets(t *testing.T, off func(string) int64) {
	t.Helper()
	for name, want := range map[string]int{
		"ibv_context.ops": ctxOps, "ibv_context.ops.poll_cq": ctxPollCQ, "ibv_context.ops.post_send": ctxPostSend,
		"ibv_context.cmd_fd": ctxCmdFD, "sizeof ibv_context_ops": ctxOpsSize,
		"sizeof ibv_device_attr": devAttrSize, "ibv_device_attr.max_mr_size": devAttrMaxMR, "ibv_device_attr.max_qp_wr": devAttrMaxQPWR,
		"ibv_device_attr.max_sge": devAttrMaxSGE, "ibv_device_attr.max_cqe": devAttrMaxCQE, "ibv_device_attr.max_qp_rd_atom": devAttrRdAtom,
		"ibv_device_attr.max_qp_init_rd_atom": devAttrInitRd, "ibv_device_attr.phys_port_cnt": devAttrPorts,
		"sizeof _compat_ibv_port_attr": portAttrSize, "_compat_ibv_port_attr.state": portAttrState,
		"_compat_ibv_port_attr.active_mtu": portAttrActiveMTU, "_compat_ibv_port_attr.gid_tbl_len": portAttrGIDTbl,
		"_compat_ibv_port_attr.lid": portAttrLID, "_compat_ibv_port_attr.active_width": portAttrWidth,
		"_compat_ibv_port_attr.active_speed": portAttrSpeed, "_compat_ibv_port_attr.link_layer": portAttrLinkLayer,
		"ibv_mr.addr": mrAddr, "ibv_mr.length": mrLen, "ibv_mr.lkey": mrLKey, "ibv_mr.rkey": mrRKey,
		"ibv_qp.qp_num": qpNum, "ibv_qp.state": qpState,
		"sizeof ibv_qp_init_attr": qpInitSize, "ibv_qp_init_attr.send_cq": qpInitSendCQ, "ibv_qp_init_attr.recv_cq": qpInitRecvCQ,
		"ibv_qp_init_attr.cap": qpInitCap, "ibv_qp_init_attr.qp_type": qpInitType, "ibv_qp_init_attr.sq_sig_all": qpInitSigAll,
		"ibv_qp_cap.max_send_wr": qpCapSendWR, "ibv_qp_cap.max_recv_wr": qpCapRecvWR, "ibv_qp_cap.max_send_sge": qpCapSendSGE,
		"ibv_qp_cap.max_recv_sge": qpCapRecvSGE, "ibv_qp_cap.max_inline_data": qpCapInlineSz,
		"sizeof ibv_qp_attr": qpAttrSize, "ibv_qp_attr.qp_state": qpAttrState, "ibv_qp_attr.path_mtu": qpAttrPathMTU,
		"ibv_qp_attr.rq_psn": qpAttrRqPSN, "ibv_qp_attr.sq_psn": qpAttrSqPSN, "ibv_qp_attr.dest_qp_num": qpAttrDestQPN,
		"ibv_qp_attr.qp_access_flags": qpAttrAccess, "ibv_qp_attr.ah_attr": qpAttrAH,
		"ibv_ah_attr.grh.dgid": ahGRHDGID, "ibv_ah_attr.grh.flow_label": ahGRHFlowLabel, "ibv_ah_attr.grh.sgid_index": ahGRHSGIDIndex,
		"ibv_ah_attr.grh.hop_limit": ahGRHHopLimit, "ibv_ah_attr.grh.traffic_class": ahGRHTClass, "ibv_ah_attr.dlid": ahDLID,
		"ibv_ah_attr.sl": ahSL, "ibv_ah_attr.is_global": ahIsGlobal, "ibv_ah_attr.port_num": ahPortNum,
		"ibv_qp_attr.pkey_index": qpAttrPKeyIndex, "ibv_qp_attr.max_rd_atomic": qpAttrMaxRdAtomic,
		"ibv_qp_attr.max_dest_rd_atomic": qpAttrMaxDestRd, "ibv_qp_attr.min_rnr_timer": qpAttrMinRNRTimer,
		"ibv_qp_attr.port_num": qpAttrPortNum, "ibv_qp_attr.timeout": qpAttrTimeout, "ibv_qp_attr.retry_cnt": qpAttrRetryCnt,
		"ibv_qp_attr.rnr_retry": qpAttrRNRRetry,
		"sizeof ibv_send_wr":    wrSize, "ibv_send_wr.wr_id": wrID, "ibv_send_wr.next": wrNext, "ibv_send_wr.sg_list": wrSGList,
		"ibv_send_wr.num_sge": wrNumSGE, "ibv_send_wr.opcode": wrOpcode, "ibv_send_wr.send_flags": wrSendFlags,
		"ibv_send_wr.wr.rdma.remote_addr": wrRemoteAddr, "ibv_send_wr.wr.rdma.rkey": wrRKey,
		"sizeof ibv_sge": sgeSize, "ibv_sge.addr": sgeAddr, "ibv_sge.length": sgeLength, "ibv_sge.lkey": sgeLKey,
		"sizeof ibv_wc": wcSize, "ibv_wc.wr_id": wcID, "ibv_wc.status": wcStatus, "ibv_wc.opcode": wcOpcode,
		"ibv_wc.vendor_err": wcVendorErr, "ibv_wc.byte_len": wcByteLen,
	} {
		if got := off(name); got != int64(want) {
			t.Errorf("%s: verbs.h puts it at %d, abi.go at %d", name, got, want)
		}
	}
}

func TestNoLibrary(t *testing.T) {
	t.Setenv("KVSIM_IBVERBS", "/nonexistent/libibverbs.so.1")
	p := ProbeVerbs()
	if !errors.Is(p.Err, ErrNoLibrary) || p.Usable() || p.Lib != "" {
		t.Fatalf("probe %+v", p)
	}
	s := p.String()
	if strings.Contains(s, "\n") || !strings.Contains(s, "/nonexistent/libibverbs.so.1") || !strings.Contains(s, "apt-get install libibverbs1") {
		t.Errorf("one line naming the file and the package, got %q", s)
	}
	// A library without the verbs: loaded, then refused by the symbol.
	_, err := LoadPath("libc.so.6")
	if !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), "symbol ibv_get_device_list is missing") {
		t.Errorf("libc as libibverbs: %v", err)
	}
}

func TestNoDevice(t *testing.T) {
	l := useFake(t, nil)
	checkFreed(t)
	p := ProbeVerbs()
	if !errors.Is(p.Err, ErrNoDevice) || len(p.Devices) != 0 {
		t.Fatalf("probe %+v", p)
	}
	if s := p.String(); strings.Contains(s, "\n") || !strings.Contains(s, "sees no device (no RDMA NIC, no soft-RoCE link") {
		t.Errorf("one line saying there is no device, got %q", s)
	}
	if _, err := l.Open(Options{}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open with no device: %v", err)
	}
	t.Setenv("FAKE_IBV_NOSYS", "1")
	if p := ProbeVerbs(); !errors.Is(p.Err, ErrNoDevice) || !strings.Contains(p.String(), "ENOSYS") {
		t.Errorf("no kernel support: %v", p.Err)
	}
}

func TestEnumerate(t *testing.T) {
	useFake(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0,mlx5_1", "FAKE_IBV_DOWN": "mlx5_1", "FAKE_IBV_MAX_MR": "274877906944"})
	checkFreed(t)
	p := ProbeVerbs()
	if p.Err != nil || !p.Usable() || len(p.Devices) != 2 {
		t.Fatalf("probe %+v", p)
	}
	d0, d1 := p.Devices[0], p.Devices[1]
	if d0.Name != "mlx5_0" || d0.FW != "16.35.fake" || d0.MaxMRSize != 256<<30 || d0.MaxQPWR != 1024 || d0.MaxCQE != 4096 || d0.MaxSGE != 4 || d0.MaxRdAtom != 16 || d0.InitRd != 16 {
		t.Errorf("device 0: %+v", d0)
	}
	if len(d0.Ports) != 1 || !d0.Ports[0].Active() || d0.Ports[0].State != "ACTIVE" || d0.Ports[0].LinkLayer != "InfiniBand" || d0.Ports[0].MTU != 4096 || d0.Ports[0].LID != 1 {
		t.Errorf("device 0 port: %+v", d0.Ports)
	}
	if g := d0.Ports[0].GID; g[0] != 0xfe || g[1] != 0x80 || g[14] != 1 || g[15] != 0 {
		t.Errorf("GID %x", g)
	}
	if len(d1.Ports) != 1 || d1.Ports[0].Active() || d1.Ports[0].State != "DOWN" || d1.Ports[0].LID != 2 {
		t.Errorf("device 1 port: %+v", d1.Ports)
	}
	want := "mlx5_0 (max MR 256 GiB): port 1 ACTIVE InfiniBand MTU 4096 LID 1; mlx5_1 (max MR 256 GiB): port 1 DOWN InfiniBand"
	if s := p.String(); !strings.HasSuffix(s, want) || strings.Contains(s, "\n") {
		t.Errorf("String\n got %q\nwant suffix %q", s, want)
	}
	t.Setenv("FAKE_IBV_LINK", "eth")
	p = ProbeVerbs()
	if pt := p.Devices[0].Ports[0]; pt.LinkLayer != "Ethernet (RoCE)" || pt.MTU != 1024 || pt.LID != 0 {
		t.Errorf("RoCE port: %+v", pt)
	}
}

func TestPortDown(t *testing.T) {
	l := useFake(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0,mlx5_1", "FAKE_IBV_DOWN": "mlx5_0"})
	checkFreed(t)
	d, err := l.Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Info().Name != "mlx5_1" {
		t.Errorf("opened %s, want the one with an active port", d.Info().Name)
	}
	d.Close()
	_, err = l.Open(Options{Device: "mlx5_0"})
	if !errors.Is(err, ErrPortDown) || !strings.Contains(err.Error(), "mlx5_0 port 1 is DOWN") {
		t.Errorf("named device with its port down: %v", err)
	}
	if _, err := l.Open(Options{Device: "mlx5_9"}); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), `no device named "mlx5_9"`) {
		t.Errorf("unknown device: %v", err)
	}
	if _, err := l.Open(Options{Device: "mlx5_1", Port: 2}); err == nil || !strings.Contains(err.Error(), "has no port 2") {
		t.Errorf("unknown port: %v", err)
	}
	t.Setenv("FAKE_IBV_DOWN", "mlx5_0,mlx5_1")
	_, err = l.Open(Options{})
	if !errors.Is(err, ErrPortDown) {
		t.Errorf("every port down: %v", err)
	}
	if p := ProbeVerbs(); !errors.Is(p.Err, ErrPortDown) || p.Usable() || !strings.Contains(p.String(), "no port is ACTIVE") {
		t.Errorf("probe with every port down: %v", p)
	}
}

func TestRegisterSplit(t *testing.T) {
	l := useFake(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0", "FAKE_IBV_MAX_MR": "65536"})
	checkFreed(t)
	d, err := l.Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	buf := mapped(t, 4*65536+100)
	r, err := d.Register(buf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rem := r.Remote()
	if r.MRs() != 5 || len(rem) != 5 {
		t.Fatalf("%d MRs, want 5 (4 of 64 KiB and 100 B)", r.MRs())
	}
	keys := map[uint32]bool{}
	for i, m := range rem {
		wantLen := uint64(65536)
		if i == 4 {
			wantLen = 100
		}
		if m.Addr != uint64(r.base)+uint64(i)*65536 || m.Len != wantLen || keys[m.RKey] {
			t.Errorf("MR %d: %+v", i, m)
		}
		keys[m.RKey] = true
	}
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "still uses it") {
		t.Errorf("closing a device with live regions: %v", err)
	}
}

func TestRegisterMemlock(t *testing.T) {
	l := useFake(t, map[string]string{"FAKE_IBV_DEVICES": "mlx5_0", "FAKE_IBV_MAX_MR": "65536", "FAKE_IBV_MEMLOCK": "131072"})
	checkFreed(t)
	d, err := l.Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	buf := mapped(t, 4*65536)
	_, err = d.Register(buf)
	if !errors.Is(err, ErrMemlock) {
		t.Fatalf("registering beyond the limit: %v", err)
	}
	for _, s := range []string{"ibv_reg_mr of 64 KiB at offset 128 KiB (memory region 3 of 4, max MR 64 KiB)", "ENOMEM", "RLIMIT_MEMLOCK", "ulimit -l unlimited", "LimitMEMLOCK=infinity"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q: %v", s, err)
		}
	}
	// The regions registered before the refusal were released.
	r, err := d.Register(buf[:131072])
	if err != nil {
		t.Fatalf("after a refusal, what fits: %v", err)
	}
	r.Close()
	if _, err := d.Register(nil); err == nil {
		t.Error("an empty buffer registered")
	}
}

// twoNodes opens two devices of the fake as two nodes.
func twoNodes(t *testing.T, env map[string]string) (a, b *Device) {
	t.Helper()
	env["FAKE_IBV_DEVICES"] = "mlx5_0,mlx5_1"
	l := useFake(t, env)
	checkFreed(t)
	a, err := l.Open(Options{Device: "mlx5_0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = l.Open(Options{Device: "mlx5_1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func TestQPStateMachine(t *testing.T) {
	a, b := twoNodes(t, map[string]string{})
	qa, err := a.NewQP(4)
	if err != nil {
		t.Fatal(err)
	}
	defer qa.Close()
	qb, err := b.NewQP(4)
	if err != nil {
		t.Fatal(err)
	}
	defer qb.Close()
	if qa.State() != "INIT" || qb.State() != "INIT" || qa.Endpoint().QPN == qb.Endpoint().QPN {
		t.Fatalf("after NewQP: %s %s, QPNs %d %d", qa.State(), qb.State(), qa.Endpoint().QPN, qb.Endpoint().QPN)
	}
	ea, eb := qa.Endpoint(), qb.Endpoint()
	if ea.LID != 1 || eb.LID != 2 || ea.MTU != 5 || ea.Port != 1 || ea.PSN > 0xffffff {
		t.Errorf("endpoints %+v %+v", ea, eb)
	}
	// Illegal: INIT -> RTS skips RTR; RTR with a required attribute missing;
	// RTR towards a LID that is not the peer's (the address vector is read
	// at its offsets) or a QP that does not exist.
	illegal := []struct {
		name string
		err  error
	}{
		{"INIT -> RTS", qa.modify(qpsRTS, maskToRTS, nil)},
		{"RTR without DEST_QPN", qa.modify(qpsRTR, maskToRTR&^maskDestQPN, nil)},
		{"RTR to a wrong LID", qa.Connect(Endpoint{QPN: eb.QPN, PSN: eb.PSN, LID: 7, Port: 1, MTU: 5})},
		{"RTR to no QP", qa.Connect(Endpoint{QPN: 0xabcdef, PSN: 1, LID: 2, Port: 1, MTU: 5})},
	}
	for _, c := range illegal {
		if c.err == nil || !strings.Contains(c.err.Error(), "EINVAL") {
			t.Errorf("%s: %v", c.name, c.err)
		}
		if qa.State() != "INIT" {
			t.Fatalf("%s moved the QP to %s", c.name, qa.State())
		}
	}
	if err := qa.Connect(eb); err != nil || qa.State() != "RTS" {
		t.Fatalf("INIT -> RTR -> RTS: %v (%s)", err, qa.State())
	}
	if err := qa.modify(qpsRTR, maskToRTR, nil); err == nil || qa.State() != "RTS" {
		t.Errorf("RTS -> RTR allowed: %v", err)
	}
	if err := qa.modify(qpsErr, maskState, nil); err != nil || qa.State() != "ERR" {
		t.Errorf("RTS -> ERR: %v", err)
	}
	if err := qa.modify(qpsReset, maskState, nil); err != nil || qa.State() != "RESET" {
		t.Errorf("ERR -> RESET: %v", err)
	}
	if err := qa.modify(qpsRTR, maskToRTR, nil); err == nil || !strings.Contains(err.Error(), "RESET -> RTR") {
		t.Errorf("RESET -> RTR: %v", err)
	}
	if err := qa.Close(); err != nil || qa.State() != "closed" || qa.Close() != nil {
		t.Errorf("close: %v, state %s", err, qa.State())
	}
}

// connect joins a and b over a loopback control connection.
func connect(t *testing.T, a, b *Device, ra, rb *Region) (ca, cb *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   *Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := Accept(ln, b, rb)
		ch <- res{c, err}
	}()
	ca, err = Dial(ln.Addr().String(), a, ra)
	r := <-ch
	if err != nil || r.err != nil {
		t.Fatalf("dial: %v; accept: %v", err, r.err)
	}
	t.Cleanup(func() { ca.Close(); r.c.Close() })
	return ca, r.c
}

func TestReadWriteRoundTrip(t *testing.T) {
	for _, link := range []string{"ib", "eth"} {
		t.Run(link, func(t *testing.T) {
			// 4 KiB memory regions: a 100 KiB move is 26 work requests,
			// two batches, cut at both sides' region boundaries.
			a, b := twoNodes(t, map[string]string{"FAKE_IBV_MAX_MR": "4096", "FAKE_IBV_LINK": link})
			roundTrip(t, a, b, 48)
		})
	}
}

// TestRealLoopback runs the round trip on a real NIC where there is one
// with an ACTIVE port: two contexts of one device, connected through the
// loopback control connection.
func TestRealLoopback(t *testing.T) {
	l, err := LoadPath(LibName)
	if err != nil {
		t.Skipf("no real libibverbs here: %v", err)
	}
	a, err := l.Open(Options{})
	if err != nil {
		t.Skipf("no usable RDMA device here: %v", err)
	}
	defer a.Close()
	b, err := l.Open(Options{Device: a.Info().Name, Port: a.Port().Num})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Logf("%s", a.Info())
	roundTrip(t, a, b, 0)
}

// roundTrip writes from a's region into b's and reads it back, byte for
// byte, and checks both directions and the refusals; wantMRs, if not 0,
// is how many memory regions b's buffer takes.
func roundTrip(t *testing.T, a, b *Device, wantMRs int) {
	t.Helper()
	bufA, bufB := mapped(t, 256<<10), mapped(t, 192<<10)
	ra, err := a.Register(bufA)
	if errors.Is(err, ErrMemlock) {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := b.Register(bufB)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ca, cb := connect(t, a, b, ra, rb)
	if ca.RemoteLen() != uint64(len(bufB)) || cb.RemoteLen() != uint64(len(bufA)) || (wantMRs != 0 && len(ca.Peer().MRs) != wantMRs) {
		t.Fatalf("peers see %d and %d bytes, %d MRs", ca.RemoteLen(), cb.RemoteLen(), len(ca.Peer().MRs))
	}
	for i := range bufA {
		bufA[i] = byte(i*7 + i>>12)
	}
	src := bufA[1000 : 1000+100<<10]
	if err := ca.Write(src, 3000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bufB[3000:3000+len(src)], src) {
		t.Fatal("RDMA WRITE: the peer's bytes differ")
	}
	if bufB[2999] != 0 || bufB[3000+len(src)] != 0 {
		t.Fatal("RDMA WRITE touched bytes around the target")
	}
	dst := bufA[150<<10 : 150<<10+len(src)]
	clear(dst)
	if err := ca.Read(dst, 3000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, bufA[1000:1000+100<<10]) {
		t.Fatal("RDMA READ: bytes differ")
	}
	// The other direction, on the accepting side's queue pair.
	bufB[0], bufB[1] = 0xaa, 0x55
	if err := cb.Write(bufB[:2], uint64(len(bufA)-2)); err != nil || bufA[len(bufA)-2] != 0xaa || bufA[len(bufA)-1] != 0x55 {
		t.Fatalf("write back: %v", err)
	}
	// Refused before anything is posted.
	if err := ca.Read(dst, uint64(len(bufB))-10); err == nil || !strings.Contains(err.Error(), "beyond the peer's") {
		t.Errorf("read past the peer's region: %v", err)
	}
	if err := ca.Write(make([]byte, 10), 0); err == nil || !strings.Contains(err.Error(), "outside the registered region") {
		t.Errorf("write from unregistered memory: %v", err)
	}
}

// TestCompletionError: a queue pair that started at a PSN the peer does
// not expect gets no answer; the completion says so, the QP is in error.
func TestCompletionError(t *testing.T) {
	a, b := twoNodes(t, map[string]string{})
	bufA, bufB := mapped(t, 8192), mapped(t, 8192)
	ra, _ := a.Register(bufA)
	defer ra.Close()
	rb, _ := b.Register(bufB)
	defer rb.Close()
	qa, _ := a.NewQP(4)
	defer qa.Close()
	qb, _ := b.NewQP(4)
	defer qb.Close()
	ea := qa.Endpoint()
	ea.PSN = (ea.PSN + 1) & 0xffffff
	if err := qb.Connect(ea); err != nil {
		t.Fatal(err)
	}
	if err := qa.Connect(qb.Endpoint()); err != nil {
		t.Fatal(err)
	}
	err := qa.transfer(wrRDMAWrite, ra, bufA[:100], rb.Remote(), 0)
	if err == nil || !strings.Contains(err.Error(), "transport retry counter exceeded") || qa.State() != "ERR" {
		t.Fatalf("%v (%s)", err, qa.State())
	}
	if err := qa.transfer(wrRDMAWrite, ra, bufA[:100], rb.Remote(), 0); err == nil || !strings.Contains(err.Error(), "ibv_post_send") {
		t.Errorf("posting on a QP in error: %v", err)
	}
}

// TestHandshakeStranger: a control peer that is not kvsim is refused at
// the handshake, and nothing is left allocated.
func TestHandshakeStranger(t *testing.T) {
	a, _ := twoNodes(t, map[string]string{})
	ra, err := a.Register(mapped(t, 4096))
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	_, err = Dial(ln.Addr().String(), a, ra)
	if !errors.Is(err, ErrWire) || !strings.Contains(err.Error(), "bad magic") {
		t.Errorf("%v", err)
	}
}

// TestRealLibrary binds the real libibverbs where it is installed: every
// symbol must resolve, and the probe says what it finds in one line.
func TestRealLibrary(t *testing.T) {
	l, err := LoadPath(LibName)
	if err != nil {
		testenv.Missing(t, "no real libibverbs here (Debian: libibverbs1): %v", err)
	}
	t.Setenv("KVSIM_IBVERBS", "")
	p := ProbeVerbs()
	t.Logf("%s: %s", l.Path(), p)
	if strings.Contains(p.String(), "\n") {
		t.Errorf("not one line: %q", p)
	}
	if p.Err != nil && !errors.Is(p.Err, ErrNoDevice) && !errors.Is(p.Err, ErrPortDown) {
		t.Errorf("unexpected: %v", p.Err)
	}
}

// TestTransferAllocs: a move, cut into several work requests and polled
// to completion, allocates nothing.
func TestTransferAllocs(t *testing.T) {
	a, b := twoNodes(t, map[string]string{"FAKE_IBV_MAX_MR": "4096"})
	bufA, bufB := mapped(t, 64<<10), mapped(t, 64<<10)
	ra, err := a.Register(bufA)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := b.Register(bufB)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	ca, _ := connect(t, a, b, ra, rb)
	if n := testing.AllocsPerRun(50, func() {
		if err := ca.Write(bufA[:40<<10], 100); err != nil {
			t.Fatal(err)
		}
		if err := ca.Read(bufA[40<<10:], 100); err != nil {
			t.Fatal(err)
		}
	}); n != 0 && !raceEnabled {
		t.Errorf("Write+Read allocate %.1f times", n)
	}
}
