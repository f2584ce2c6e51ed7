package rdma

import "strconv"

// The libibverbs ABI kvsim relies on, for 64-bit Linux (LP64: x86-64 and
// arm64 lay these structs out identically). Offsets are those of
// <infiniband/verbs.h> in rdma-core; the fake library's tests compute them
// with the C compiler from the same declarations and compare.
//
// Two calls have no exported symbol: ibv_post_send and ibv_poll_cq are
// static inline functions that jump through the ops table embedded in
// struct ibv_context. rdma-core keeps struct ibv_context and the order of
// struct ibv_context_ops fixed for ABI compatibility with applications
// built against old headers (its unused slots are renamed _compat_*,
// never removed), so the two pointers sit at fixed offsets.
const (
	ptrSize = 8

	// struct ibv_context { struct ibv_device *device; struct ibv_context_ops ops; ... }
	ctxOps         = 8
	ctxPollCQ      = ctxOps + 11*ptrSize // ops.poll_cq, slot 11: 96
	ctxPostSend    = ctxOps + 25*ptrSize // ops.post_send, slot 25: 208
	ctxOpsSize     = 32 * ptrSize        // sizeof(struct ibv_context_ops)
	ctxCmdFD       = ctxOps + ctxOpsSize // int cmd_fd, after the table: 264
	devAttrSize    = 232                 // sizeof(struct ibv_device_attr)
	devAttrMaxMR   = 80                  // uint64_t max_mr_size (after char fw_ver[64], two __be64 GUIDs)
	devAttrMaxQPWR = 112                 // int max_qp_wr
	devAttrMaxSGE  = 120                 // int max_sge
	devAttrMaxCQE  = 132                 // int max_cqe
	devAttrRdAtom  = 144                 // int max_qp_rd_atom
	devAttrInitRd  = 156                 // int max_qp_init_rd_atom
	devAttrPorts   = 227                 // uint8_t phys_port_cnt

	// The exported ibv_query_port fills struct _compat_ibv_port_attr (the
	// inline wrapper of newer headers passes a larger struct with the same
	// prefix): 48 bytes.
	portAttrSize      = 48
	portAttrState     = 0  // enum ibv_port_state
	portAttrActiveMTU = 8  // enum ibv_mtu
	portAttrGIDTbl    = 12 // int gid_tbl_len
	portAttrLID       = 34 // uint16_t lid
	portAttrWidth     = 43 // uint8_t active_width
	portAttrSpeed     = 44 // uint8_t active_speed
	portAttrLinkLayer = 46 // uint8_t link_layer

	// struct ibv_mr { context; pd; void *addr; size_t length; uint32_t handle, lkey, rkey; }
	mrAddr = 16
	mrLen  = 24
	mrLKey = 36
	mrRKey = 40

	// struct ibv_qp { context; qp_context; pd; send_cq; recv_cq; srq; uint32_t handle, qp_num; enum state; ... }
	qpNum   = 52
	qpState = 56

	// struct ibv_qp_init_attr
	qpInitSize    = 64
	qpInitSendCQ  = 8
	qpInitRecvCQ  = 16
	qpInitCap     = 32 // struct ibv_qp_cap {max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data}
	qpInitType    = 52
	qpInitSigAll  = 56
	qpCapSendWR   = 0
	qpCapRecvWR   = 4
	qpCapSendSGE  = 8
	qpCapRecvSGE  = 12
	qpCapInlineSz = 16

	// struct ibv_qp_attr: 144 bytes. union ibv_gid holds two __be64, so
	// struct ibv_ah_attr (and the grh inside) is 8-aligned.
	qpAttrSize        = 144
	qpAttrState       = 0
	qpAttrPathMTU     = 8
	qpAttrRqPSN       = 20
	qpAttrSqPSN       = 24
	qpAttrDestQPN     = 28
	qpAttrAccess      = 32
	qpAttrAH          = 56 // struct ibv_ah_attr ah_attr
	ahGRHDGID         = 0  // grh.dgid, 16 bytes
	ahGRHFlowLabel    = 16
	ahGRHSGIDIndex    = 20
	ahGRHHopLimit     = 21
	ahGRHTClass       = 22
	ahDLID            = 24
	ahSL              = 26
	ahIsGlobal        = 29
	ahPortNum         = 30
	qpAttrPKeyIndex   = 120
	qpAttrMaxRdAtomic = 126
	qpAttrMaxDestRd   = 127
	qpAttrMinRNRTimer = 128
	qpAttrPortNum     = 129
	qpAttrTimeout     = 130
	qpAttrRetryCnt    = 131
	qpAttrRNRRetry    = 132

	// struct ibv_send_wr: 128 bytes.
	wrSize       = 128
	wrID         = 0
	wrNext       = 8
	wrSGList     = 16
	wrNumSGE     = 24
	wrOpcode     = 28
	wrSendFlags  = 32
	wrRemoteAddr = 40 // wr.rdma.remote_addr
	wrRKey       = 48 // wr.rdma.rkey

	// struct ibv_sge { uint64_t addr; uint32_t length, lkey; }
	sgeSize   = 16
	sgeAddr   = 0
	sgeLength = 8
	sgeLKey   = 12

	// struct ibv_wc: 48 bytes.
	wcSize      = 48
	wcID        = 0
	wcStatus    = 8
	wcOpcode    = 12
	wcVendorErr = 16
	wcByteLen   = 20
)

// Enums and flags of verbs.h.
const (
	qpsReset = 0
	qpsInit  = 1
	qpsRTR   = 2
	qpsRTS   = 3
	qpsErr   = 6

	qptRC = 2

	accessLocalWrite  = 1
	accessRemoteWrite = 2
	accessRemoteRead  = 4

	maskState        = 1 << 0
	maskAccessFlags  = 1 << 3
	maskPKeyIndex    = 1 << 4
	maskPort         = 1 << 5
	maskAV           = 1 << 7
	maskPathMTU      = 1 << 8
	maskTimeout      = 1 << 9
	maskRetryCnt     = 1 << 10
	maskRNRRetry     = 1 << 11
	maskRqPSN        = 1 << 12
	maskMaxQPRdAtom  = 1 << 13
	maskMinRNRTimer  = 1 << 15
	maskSqPSN        = 1 << 16
	maskMaxDestRdAto = 1 << 17
	maskDestQPN      = 1 << 20

	// The masks each transition of an RC queue pair needs (verbs
	// ibv_modify_qp(3): required attributes).
	maskToInit = maskState | maskPKeyIndex | maskPort | maskAccessFlags
	maskToRTR  = maskState | maskAV | maskPathMTU | maskDestQPN | maskRqPSN | maskMaxDestRdAto | maskMinRNRTimer
	maskToRTS  = maskState | maskTimeout | maskRetryCnt | maskRNRRetry | maskSqPSN | maskMaxQPRdAtom

	wrRDMAWrite = 0
	wrRDMARead  = 4
	sendSignal  = 2

	portDown   = 1
	portActive = 4

	linkLayerIB  = 1
	linkLayerEth = 2
)

// QP states by name, as ibv_qp_state words them.
var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// portStateNames follow enum ibv_port_state.
var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

func portStateName(s int) string {
	if s >= 0 && s < len(portStateNames) {
		return portStateNames[s]
	}
	return "state " + strconv.Itoa(s)
}

func qpStateName(s int) string {
	if s >= 0 && s < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "state " + strconv.Itoa(s)
}

func linkLayerName(l int) string {
	switch l {
	case linkLayerIB:
		return "InfiniBand"
	case linkLayerEth:
		return "Ethernet (RoCE)"
	}
	return "InfiniBand" // IBV_LINK_LAYER_UNSPECIFIED: old drivers, IB
}

// mtuBytes turns enum ibv_mtu (1 = 256 ... 5 = 4096) into bytes.
func mtuBytes(m int) int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << m
}
