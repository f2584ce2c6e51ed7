// Package rdmatest builds a fake libibverbs from C source with the system
// compiler, for the tests of the verbs path and of what is built on it
// (the RDMA store, kvsim serve). Only tests import it.
//
// The fake works within one process only: two device contexts opened in
// the same process act as two nodes, and RDMA READ and WRITE are memcpy
// between their registered regions. Two processes each loading it see
// nothing of each other.
package rdmatest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kvsim/internal/testenv"
)

// fakeC is a stand-in libibverbs: the exported verbs kvsim binds, with
// the structs declared field for field as <infiniband/verbs.h> declares
// them (so the C compiler computes the offsets abi.go hard-codes), and a
// struct ibv_context whose ops table carries post_send and poll_cq in
// their slots, so the calls kvsim makes through that table are exercised
// exactly as on a real NIC. Two contexts in one process are two "nodes":
// RDMA READ and WRITE copy bytes between their registered regions.
//
// Configuration, read at each call from the environment:
//
//	FAKE_IBV_DEVICES  comma-separated device names (none: no device)
//	FAKE_IBV_NOSYS    ibv_get_device_list fails with ENOSYS (no kernel support)
//	FAKE_IBV_DOWN     comma-separated devices whose port 1 is DOWN
//	FAKE_IBV_LINK     "eth": RoCE ports (LID 0, addressed by GID), else InfiniBand
//	FAKE_IBV_MAX_MR   max_mr_size in bytes (default 1 TiB)
//	FAKE_IBV_MEMLOCK  bytes ibv_reg_mr may pin in all before it fails with ENOMEM
const fakeC = `
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The declarations of verbs.h kvsim relies on, field for field; or the
   real header, to check the offsets against it where it is installed. */
#ifdef REAL_VERBS_H
#include <infiniband/verbs.h>
#else
union ibv_gid { uint8_t raw[16]; struct { uint64_t subnet_prefix; uint64_t interface_id; } global; };
struct ibv_device; struct ibv_cq; struct ibv_qp; struct ibv_wc; struct ibv_send_wr; struct ibv_recv_wr;
struct ibv_context_ops {
	void *(*_compat_query_device)(void);
	int (*_compat_query_port)(void);
	void *(*_compat_alloc_pd)(void);
	void *(*_compat_dealloc_pd)(void);
	void *(*_compat_reg_mr)(void);
	void *(*_compat_rereg_mr)(void);
	void *(*_compat_dereg_mr)(void);
	void *(*alloc_mw)(void);
	int (*bind_mw)(void);
	int (*dealloc_mw)(void);
	void *(*_compat_create_cq)(void);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	void *(*_compat_cq_event)(void);
	void *(*_compat_resize_cq)(void);
	void *(*_compat_destroy_cq)(void);
	void *(*_compat_create_srq)(void);
	void *(*_compat_modify_srq)(void);
	void *(*_compat_query_srq)(void);
	void *(*_compat_destroy_srq)(void);
	int (*post_srq_recv)(void);
	void *(*_compat_create_qp)(void);
	void *(*_compat_query_qp)(void);
	void *(*_compat_modify_qp)(void);
	void *(*_compat_destroy_qp)(void);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	void *(*_compat_create_ah)(void);
	void *(*_compat_destroy_ah)(void);
	void *(*_compat_attach_mcast)(void);
	void *(*_compat_detach_mcast)(void);
	void *(*_compat_async_event)(void);
};
struct ibv_context {
	struct ibv_device *device;
	struct ibv_context_ops ops;
	int cmd_fd;
	int async_fd;
	int num_comp_vectors;
	pthread_mutex_t mutex;
	void *abi_compat;
};
struct ibv_device_attr {
	char fw_ver[64];
	uint64_t node_guid;
	uint64_t sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	int atomic_cap;
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};
#endif
/* What the exported ibv_query_port fills (libibverbs/verbs.c). */
struct _compat_ibv_port_attr {
	int state;
	int max_mtu;
	int active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
};
#ifndef REAL_VERBS_H
struct ibv_pd { struct ibv_context *context; uint32_t handle; };
struct ibv_mr { struct ibv_context *context; struct ibv_pd *pd; void *addr; size_t length; uint32_t handle; uint32_t lkey; uint32_t rkey; };
struct ibv_cq {
	struct ibv_context *context;
	void *channel;
	void *cq_context;
	uint32_t handle;
	int cqe;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed;
	uint32_t async_events_completed;
};
struct ibv_qp_cap { uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data; };
struct ibv_qp {
	struct ibv_context *context;
	void *qp_context;
	struct ibv_pd *pd;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	void *srq;
	uint32_t handle;
	uint32_t qp_num;
	int state;
	int qp_type;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
};
struct ibv_qp_init_attr { void *qp_context; struct ibv_cq *send_cq; struct ibv_cq *recv_cq; void *srq; struct ibv_qp_cap cap; int qp_type; int sq_sig_all; };
struct ibv_global_route { union ibv_gid dgid; uint32_t flow_label; uint8_t sgid_index; uint8_t hop_limit; uint8_t traffic_class; };
struct ibv_ah_attr { struct ibv_global_route grh; uint16_t dlid; uint8_t sl; uint8_t src_path_bits; uint8_t static_rate; uint8_t is_global; uint8_t port_num; };
struct ibv_qp_attr {
	int qp_state;
	int cur_qp_state;
	int path_mtu;
	int path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct ibv_qp_cap cap;
	struct ibv_ah_attr ah_attr;
	struct ibv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};
struct ibv_sge { uint64_t addr; uint32_t length; uint32_t lkey; };
struct ibv_mw_bind_info { struct ibv_mr *mr; uint64_t addr; uint64_t length; unsigned int mw_access_flags; };
struct ibv_send_wr {
	uint64_t wr_id;
	struct ibv_send_wr *next;
	struct ibv_sge *sg_list;
	int num_sge;
	int opcode;
	unsigned int send_flags;
	union { uint32_t imm_data; uint32_t invalidate_rkey; };
	union {
		struct { uint64_t remote_addr; uint32_t rkey; } rdma;
		struct { uint64_t remote_addr; uint64_t compare_add; uint64_t swap; uint32_t rkey; } atomic;
		struct { void *ah; uint32_t remote_qpn; uint32_t remote_qkey; } ud;
	} wr;
	union { struct { uint32_t remote_srqn; } xrc; } qp_type;
	union {
		struct { void *mw; uint32_t rkey; struct ibv_mw_bind_info bind_info; } bind_mw;
		struct { void *hdr; uint16_t hdr_sz; uint16_t mss; } tso;
	};
};
struct ibv_wc {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data;
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

#endif

/* The offsets, as this compiler lays the declarations out. */
#define O(s, f) { #s "." #f, offsetof(struct s, f) }
#define Z(s) { "sizeof " #s, sizeof(struct s) }
static const struct { const char *name; size_t v; } offs[] = {
	O(ibv_context, ops), O(ibv_context, ops.poll_cq), O(ibv_context, ops.post_send), O(ibv_context, cmd_fd), Z(ibv_context_ops),
	Z(ibv_device_attr), O(ibv_device_attr, max_mr_size), O(ibv_device_attr, max_qp_wr), O(ibv_device_attr, max_sge),
	O(ibv_device_attr, max_cqe), O(ibv_device_attr, max_qp_rd_atom), O(ibv_device_attr, max_qp_init_rd_atom), O(ibv_device_attr, phys_port_cnt),
	Z(_compat_ibv_port_attr), O(_compat_ibv_port_attr, state), O(_compat_ibv_port_attr, active_mtu), O(_compat_ibv_port_attr, gid_tbl_len),
	O(_compat_ibv_port_attr, lid), O(_compat_ibv_port_attr, active_width), O(_compat_ibv_port_attr, active_speed), O(_compat_ibv_port_attr, link_layer),
	O(ibv_mr, addr), O(ibv_mr, length), O(ibv_mr, lkey), O(ibv_mr, rkey), O(ibv_qp, qp_num), O(ibv_qp, state),
	Z(ibv_qp_init_attr), O(ibv_qp_init_attr, send_cq), O(ibv_qp_init_attr, recv_cq), O(ibv_qp_init_attr, cap), O(ibv_qp_init_attr, qp_type),
	O(ibv_qp_init_attr, sq_sig_all), O(ibv_qp_cap, max_send_wr), O(ibv_qp_cap, max_recv_wr), O(ibv_qp_cap, max_send_sge),
	O(ibv_qp_cap, max_recv_sge), O(ibv_qp_cap, max_inline_data),
	Z(ibv_qp_attr), O(ibv_qp_attr, qp_state), O(ibv_qp_attr, path_mtu), O(ibv_qp_attr, rq_psn), O(ibv_qp_attr, sq_psn), O(ibv_qp_attr, dest_qp_num),
	O(ibv_qp_attr, qp_access_flags), O(ibv_qp_attr, ah_attr), O(ibv_ah_attr, grh.dgid), O(ibv_ah_attr, grh.flow_label),
	O(ibv_ah_attr, grh.sgid_index), O(ibv_ah_attr, grh.hop_limit), O(ibv_ah_attr, grh.traffic_class), O(ibv_ah_attr, dlid), O(ibv_ah_attr, sl),
	O(ibv_ah_attr, is_global), O(ibv_ah_attr, port_num), O(ibv_qp_attr, pkey_index), O(ibv_qp_attr, max_rd_atomic),
	O(ibv_qp_attr, max_dest_rd_atomic), O(ibv_qp_attr, min_rnr_timer), O(ibv_qp_attr, port_num), O(ibv_qp_attr, timeout),
	O(ibv_qp_attr, retry_cnt), O(ibv_qp_attr, rnr_retry),
	Z(ibv_send_wr), O(ibv_send_wr, wr_id), O(ibv_send_wr, next), O(ibv_send_wr, sg_list), O(ibv_send_wr, num_sge), O(ibv_send_wr, opcode),
	O(ibv_send_wr, send_flags), O(ibv_send_wr, wr.rdma.remote_addr), O(ibv_send_wr, wr.rdma.rkey),
	Z(ibv_sge), O(ibv_sge, addr), O(ibv_sge, length), O(ibv_sge, lkey),
	Z(ibv_wc), O(ibv_wc, wr_id), O(ibv_wc, status), O(ibv_wc, opcode), O(ibv_wc, vendor_err), O(ibv_wc, byte_len),
};
long fake_offset(const char *name) {
	for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
		if (!strcmp(offs[i].name, name)) return (long)offs[i].v;
	return -1;
}

#ifndef OFFSETS_ONLY
/* The fake's state, under one lock. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define MAXDEV 8
#define MAXOBJ 256
struct ibv_device { char name[64]; int idx; };
static struct ibv_device devs[MAXDEV];
static int live; /* lists, contexts, PDs, MRs, CQs and QPs not yet freed */
static size_t pinned;
static struct ibv_mr *mrs[MAXOBJ];
struct fake_cq { struct ibv_cq cq; int cap, head, n; struct ibv_wc *ring; int users; };
struct fake_qp { struct ibv_qp qp; uint32_t dest, rq_psn, sq_psn; unsigned access; uint32_t max_send; int mtu; };
static struct fake_qp *qps[MAXOBJ];
static uint32_t next_qpn = 0x11;
struct fake_pd { struct ibv_pd pd; int users; };

int fake_live(void) { return live; }

static int has(const char *list, const char *name) {
	if (!list) return 0;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && !strncmp(p, name, n)) return 1;
		if (!e) break;
		p = e + 1;
	}
	return 0;
}
static int eth(void) { const char *e = getenv("FAKE_IBV_LINK"); return e && !strcmp(e, "eth"); }
static uint64_t max_mr(void) { const char *e = getenv("FAKE_IBV_MAX_MR"); return e ? strtoull(e, 0, 10) : (uint64_t)1 << 40; }
static int dev_idx(struct ibv_context *c) { return ((struct ibv_device *)c->device)->idx; }
static void gid_of(int idx, int index, uint8_t *g) { memset(g, 0, 16); g[0] = 0xfe; g[1] = 0x80; g[14] = (uint8_t)(idx + 1); g[15] = (uint8_t)index; }

struct ibv_device **ibv_get_device_list(int *num) {
	if (getenv("FAKE_IBV_NOSYS")) { errno = ENOSYS; return NULL; }
	struct ibv_device **l = calloc(MAXDEV + 1, sizeof *l);
	int n = 0;
	const char *e = getenv("FAKE_IBV_DEVICES");
	for (const char *p = e; p && *p && n < MAXDEV;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len > 63) len = 63;
		memcpy(devs[n].name, p, len); devs[n].name[len] = 0; devs[n].idx = n;
		l[n] = &devs[n]; n++;
		if (!c) break;
		p = c + 1;
	}
	if (num) *num = n;
	pthread_mutex_lock(&mu); live++; pthread_mutex_unlock(&mu);
	return l;
}
void ibv_free_device_list(struct ibv_device **l) { free(l); pthread_mutex_lock(&mu); live--; pthread_mutex_unlock(&mu); }
const char *ibv_get_device_name(struct ibv_device *d) { return d->name; }

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);

struct ibv_context *ibv_open_device(struct ibv_device *d) {
	struct ibv_context *c = calloc(1, sizeof *c);
	c->device = d;
	c->ops.poll_cq = fake_poll_cq;
	c->ops.post_send = fake_post_send;
	c->cmd_fd = -1;
	pthread_mutex_lock(&mu); live++; pthread_mutex_unlock(&mu);
	return c;
}
int ibv_close_device(struct ibv_context *c) { free(c); pthread_mutex_lock(&mu); live--; pthread_mutex_unlock(&mu); return 0; }

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a) {
	memset(a, 0, sizeof *a);
	strcpy(a->fw_ver, "16.35.fake");
	a->max_mr_size = max_mr();
	a->max_qp_wr = 1024; a->max_sge = 4; a->max_cqe = 4096;
	a->max_qp_rd_atom = 16; a->max_qp_init_rd_atom = 16;
	a->phys_port_cnt = 1;
	return 0;
}
int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *a) {
	if (port != 1) return EINVAL;
	memset(a, 0, sizeof *a);
	a->state = has(getenv("FAKE_IBV_DOWN"), ((struct ibv_device *)c->device)->name) ? 1 : 4;
	a->max_mtu = 5;
	a->active_mtu = eth() ? 3 : 5;
	a->gid_tbl_len = 4;
	a->lid = eth() ? 0 : (uint16_t)(dev_idx(c) + 1);
	a->active_width = 2; a->active_speed = 32;
	a->link_layer = eth() ? 2 : 1;
	return 0;
}
int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *g) {
	if (port != 1 || index < 0 || index >= 4) return -1;
	gid_of(dev_idx(c), index, g->raw);
	return 0;
}
struct ibv_pd *ibv_alloc_pd(struct ibv_context *c) {
	struct fake_pd *p = calloc(1, sizeof *p);
	p->pd.context = c;
	pthread_mutex_lock(&mu); live++; pthread_mutex_unlock(&mu);
	return &p->pd;
}
int ibv_dealloc_pd(struct ibv_pd *pd) {
	struct fake_pd *p = (struct fake_pd *)pd;
	pthread_mutex_lock(&mu);
	if (p->users) { pthread_mutex_unlock(&mu); return EBUSY; }
	live--; pthread_mutex_unlock(&mu);
	free(p); return 0;
}
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access) {
	if (len == 0 || len > max_mr()) { errno = EINVAL; return NULL; }
	const char *lim = getenv("FAKE_IBV_MEMLOCK");
	pthread_mutex_lock(&mu);
	if (lim && pinned + len > strtoull(lim, 0, 10)) { pthread_mutex_unlock(&mu); errno = ENOMEM; return NULL; }
	int slot = -1;
	for (int i = 0; i < MAXOBJ; i++) if (!mrs[i]) { slot = i; break; }
	if (slot < 0) { pthread_mutex_unlock(&mu); errno = ENOSPC; return NULL; }
	struct ibv_mr *m = calloc(1, sizeof *m);
	m->context = pd->context; m->pd = pd; m->addr = addr; m->length = len;
	m->handle = (uint32_t)access;
	m->lkey = 0x1000 + (uint32_t)slot; m->rkey = 0x8000 + (uint32_t)slot;
	mrs[slot] = m; pinned += len; live++; ((struct fake_pd *)pd)->users++;
	pthread_mutex_unlock(&mu);
	return m;
}
int ibv_dereg_mr(struct ibv_mr *m) {
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXOBJ; i++) if (mrs[i] == m) mrs[i] = 0;
	pinned -= m->length; live--; ((struct fake_pd *)m->pd)->users--;
	pthread_mutex_unlock(&mu);
	free(m); return 0;
}
struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *ctx, void *ch, int vec) {
	if (cqe < 1 || cqe > 4096) { errno = EINVAL; return NULL; }
	struct fake_cq *q = calloc(1, sizeof *q);
	q->cq.context = c; q->cq.cqe = cqe; q->cap = cqe;
	q->ring = calloc((size_t)cqe, sizeof *q->ring);
	pthread_mutex_lock(&mu); live++; pthread_mutex_unlock(&mu);
	return &q->cq;
}
int ibv_destroy_cq(struct ibv_cq *cq) {
	struct fake_cq *q = (struct fake_cq *)cq;
	pthread_mutex_lock(&mu);
	if (q->users) { pthread_mutex_unlock(&mu); return EBUSY; }
	live--; pthread_mutex_unlock(&mu);
	free(q->ring); free(q); return 0;
}
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a) {
	if (a->qp_type != 2 || !a->send_cq || !a->recv_cq || a->cap.max_send_wr < 1 || a->cap.max_send_wr > 1024 ||
	    a->cap.max_send_sge < 1 || a->cap.max_send_sge > 4 || a->srq) { errno = EINVAL; return NULL; }
	pthread_mutex_lock(&mu);
	int slot = -1;
	for (int i = 0; i < MAXOBJ; i++) if (!qps[i]) { slot = i; break; }
	if (slot < 0) { pthread_mutex_unlock(&mu); errno = ENOMEM; return NULL; }
	struct fake_qp *q = calloc(1, sizeof *q);
	q->qp.context = pd->context; q->qp.pd = pd; q->qp.send_cq = a->send_cq; q->qp.recv_cq = a->recv_cq;
	q->qp.qp_num = next_qpn++; q->qp.state = 0; q->qp.qp_type = 2; q->max_send = a->cap.max_send_wr;
	qps[slot] = q; live++;
	((struct fake_pd *)pd)->users++; ((struct fake_cq *)a->send_cq)->users++; ((struct fake_cq *)a->recv_cq)->users++;
	pthread_mutex_unlock(&mu);
	return &q->qp;
}
int ibv_destroy_qp(struct ibv_qp *qp) {
	struct fake_qp *q = (struct fake_qp *)qp;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXOBJ; i++) if (qps[i] == q) qps[i] = 0;
	live--; ((struct fake_pd *)qp->pd)->users--; ((struct fake_cq *)qp->send_cq)->users--; ((struct fake_cq *)qp->recv_cq)->users--;
	pthread_mutex_unlock(&mu);
	free(q); return 0;
}
static struct fake_qp *qp_by_num(uint32_t n) {
	for (int i = 0; i < MAXOBJ; i++) if (qps[i] && qps[i]->qp.qp_num == n) return qps[i];
	return 0;
}

#define M_STATE 1
#define TO_INIT (1 | 16 | 32 | 8)
#define TO_RTR (1 | 128 | 256 | 1048576 | 4096 | 131072 | 32768)
#define TO_RTS (1 | 512 | 1024 | 2048 | 65536 | 8192)

/* ibv_modify_qp: the RC transitions with exactly their required
   attributes, each checked, and any state to RESET or ERR. */
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
	struct fake_qp *q = (struct fake_qp *)qp;
	if (!(mask & M_STATE)) return EINVAL;
	int from = qp->state, to = a->qp_state;
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (to == 0 || to == 6) {
		if (mask != M_STATE) rc = EINVAL;
	} else if (from == 0 && to == 1) {
		if (mask != TO_INIT || a->port_num != 1 || a->pkey_index != 0 || (a->qp_access_flags & ~15u)) rc = EINVAL;
		else q->access = a->qp_access_flags;
	} else if (from == 1 && to == 2) {
		struct fake_qp *d = qp_by_num(a->dest_qp_num);
		struct ibv_ah_attr *ah = &a->ah_attr;
		int maxmtu = eth() ? 3 : 5;
		if (mask != TO_RTR || !d || a->path_mtu < 1 || a->path_mtu > maxmtu || a->rq_psn > 0xffffff ||
		    a->max_dest_rd_atomic < 1 || a->max_dest_rd_atomic > 16 || a->min_rnr_timer > 31 || ah->port_num != 1) {
			rc = EINVAL;
		} else if (eth()) {
			uint8_t g[16];
			gid_of(dev_idx(d->qp.context), 0, g);
			if (!ah->is_global || memcmp(ah->grh.dgid.raw, g, 16) || ah->grh.hop_limit == 0 || ah->grh.sgid_index >= 4) rc = EINVAL;
		} else if (ah->is_global || ah->dlid != dev_idx(d->qp.context) + 1) {
			rc = EINVAL;
		}
		if (!rc) { q->dest = a->dest_qp_num; q->rq_psn = a->rq_psn; q->mtu = a->path_mtu; }
	} else if (from == 2 && to == 3) {
		if (mask != TO_RTS || a->sq_psn > 0xffffff || a->timeout > 31 || a->retry_cnt > 7 || a->rnr_retry > 7 ||
		    a->max_rd_atomic < 1 || a->max_rd_atomic > 16) rc = EINVAL;
		else q->sq_psn = a->sq_psn;
	} else {
		rc = EINVAL;
	}
	if (!rc) qp->state = to;
	pthread_mutex_unlock(&mu);
	return rc;
}

static struct ibv_mr *mr_by(uint32_t key, int remote) {
	for (int i = 0; i < MAXOBJ; i++) if (mrs[i] && (remote ? mrs[i]->rkey : mrs[i]->lkey) == key) return mrs[i];
	return 0;
}
static int covers(struct ibv_mr *m, uint64_t a, uint64_t n) {
	return m && a >= (uint64_t)(uintptr_t)m->addr && a + n <= (uint64_t)(uintptr_t)m->addr + m->length;
}

/* post_send, reached only through the context's ops table: RDMA READ and
   WRITE between this QP's memory and its peer's, completed at once. */
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
	struct fake_qp *q = (struct fake_qp *)qp;
	struct fake_cq *cq = (struct fake_cq *)qp->send_cq;
	pthread_mutex_lock(&mu);
	if (qp->state != 3) { *bad = wr; pthread_mutex_unlock(&mu); return EINVAL; }
	for (; wr; wr = wr->next) {
		if ((wr->opcode != 0 && wr->opcode != 4) || wr->num_sge < 1 || wr->num_sge > 4 || cq->n == cq->cap) {
			*bad = wr; pthread_mutex_unlock(&mu); return cq->n == cq->cap ? ENOMEM : EINVAL;
		}
		struct fake_qp *d = qp_by_num(q->dest);
		int status = 0;
		uint64_t total = 0;
		for (int i = 0; i < wr->num_sge; i++) total += wr->sg_list[i].length;
		struct ibv_mr *rm = mr_by(wr->wr.rdma.rkey, 1);
		unsigned need = wr->opcode == 0 ? 2 : 4;
		if (!d || d->qp.state < 2 || d->qp.state > 3 || d->dest != qp->qp_num) status = 12; /* IBV_WC_RETRY_EXC_ERR: nobody answers */
		else if (d->rq_psn != q->sq_psn) status = 12; /* the PSNs disagree: the peer drops every packet */
		else if (!covers(rm, wr->wr.rdma.remote_addr, total) || rm->pd != d->qp.pd || !((unsigned)rm->handle & need) || !(d->access & need)) status = 10; /* IBV_WC_REM_ACCESS_ERR */
		uint64_t off = 0;
		for (int i = 0; !status && i < wr->num_sge; i++) {
			struct ibv_sge *s = &wr->sg_list[i];
			struct ibv_mr *lm = mr_by(s->lkey, 0);
			if (!covers(lm, s->addr, s->length) || lm->pd != qp->pd || (wr->opcode == 4 && !((unsigned)lm->handle & 1))) { status = 4; break; } /* IBV_WC_LOC_PROT_ERR */
			char *remote = (char *)(uintptr_t)(wr->wr.rdma.remote_addr + off);
			char *local = (char *)(uintptr_t)s->addr;
			if (wr->opcode == 0) memcpy(remote, local, s->length); else memcpy(local, remote, s->length);
			off += s->length;
		}
		if (status) qp->state = 6;
		if (status || (wr->send_flags & 2)) {
			struct ibv_wc *w = &cq->ring[(cq->head + cq->n) % cq->cap];
			memset(w, 0, sizeof *w);
			w->wr_id = wr->wr_id; w->status = status; w->opcode = wr->opcode == 0 ? 1 : 2;
			w->byte_len = (uint32_t)total; w->qp_num = qp->qp_num; w->vendor_err = status ? 0x51 : 0;
			cq->n++;
		}
	}
	pthread_mutex_unlock(&mu);
	return 0;
}
static int fake_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc) {
	struct fake_cq *cq = (struct fake_cq *)c;
	pthread_mutex_lock(&mu);
	int k = 0;
	for (; k < n && cq->n > 0; k++) {
		wc[k] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap; cq->n--;
	}
	pthread_mutex_unlock(&mu);
	return k;
}
const char *ibv_wc_status_str(int s) {
	switch (s) {
	case 0: return "success";
	case 4: return "local protection error";
	case 10: return "remote access error";
	case 12: return "transport retry counter exceeded";
	}
	return "fake status";
}
#endif
`

// Vars are the environment variables that shape the fake; Use clears the
// ones it is not given.
var Vars = []string{"FAKE_IBV_DEVICES", "FAKE_IBV_NOSYS", "FAKE_IBV_DOWN", "FAKE_IBV_LINK", "FAKE_IBV_MAX_MR", "FAKE_IBV_MEMLOCK"}

// Compile compiles the fake into a shared library named name in a new
// folder (the caller removes it), with extra compiler flags
// (-DREAL_VERBS_H -DOFFSETS_ONLY: the offsets table against the installed
// <infiniband/verbs.h>).
func Compile(name string, flags ...string) (string, error) {
	dir, err := os.MkdirTemp("", "kvsim-fake-ibverbs-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if err := compileTo(p, flags...); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return p, nil
}

func compileTo(p string, flags ...string) error {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return fmt.Errorf("no C compiler (cc) to build the fake libibverbs: %v", err)
	}
	src := p + ".c"
	if err := os.WriteFile(src, []byte(fakeC), 0o644); err != nil {
		return err
	}
	defer os.Remove(src)
	args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wno-unused-parameter", "-o", p, src, "-lpthread"}, flags...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("the C compiler cannot build the fake libibverbs: %v: %s", err, b)
	}
	return nil
}

var (
	once    sync.Once
	libPath string
	libErr  string
)

// Path compiles the fake once per test binary and returns its path, or
// skips tb (fails it under KVSIM_REQUIRE_ALL) without a C compiler. The
// library stays loaded until the process exits, so it is kept in a folder
// of the system's temporary directory named by a hash of its source and
// reused by later test runs, not removed.
func Path(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		h := sha256.Sum256([]byte(fakeC))
		dir := filepath.Join(os.TempDir(), "kvsim-fake-ibverbs-"+hex.EncodeToString(h[:6]))
		p := filepath.Join(dir, "libfakeibverbs.so.1")
		if _, err := os.Stat(p); err == nil {
			libPath = p
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			libErr = err.Error()
			return
		}
		// Compiled beside and renamed: another test binary may load it meanwhile.
		tmp, err := os.CreateTemp(dir, "build-*.so")
		if err != nil {
			libErr = err.Error()
			return
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		if err := compileTo(tmp.Name()); err != nil {
			libErr = err.Error()
			return
		}
		if err := os.Rename(tmp.Name(), p); err != nil {
			libErr = err.Error()
			return
		}
		libPath = p
	})
	if libPath == "" {
		testenv.Missing(tb, "%s", libErr)
	}
	return libPath
}

// Use points the verbs loader (KVSIM_IBVERBS) at the fake with the given
// settings, every FAKE_IBV_ variable not in env unset, for the rest of
// the test, and returns the library's path.
func Use(t *testing.T, env map[string]string) string {
	t.Helper()
	p := Path(t)
	t.Setenv("KVSIM_IBVERBS", p)
	for _, k := range Vars {
		t.Setenv(k, env[k]) // restored at the end of the test
		if _, ok := env[k]; !ok {
			if err := os.Unsetenv(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := range env {
		if !strings.HasPrefix(k, "FAKE_IBV_") {
			t.Fatalf("rdmatest.Use: %s is not one of the fake's variables %v", k, Vars)
		}
	}
	return p
}
