// Package hw is the real-hardware body: it carries out the core's moves on
// real memory and storage and measures what each move costs. It opens one
// store per tier (OpenStores; each tier kind registers itself in a
// tierkind_*.go file) and drives them (Body, Sequential). The stores
// themselves live in hw's parts:
//
//   - hw/store: the contract every store implements and its named
//     capabilities; hw/store/storetest, the conformance suite each
//     store's package runs (docs/stores.md)
//   - hw/ioengine: io_uring with a pread/pwrite fallback, O_DIRECT files,
//     arenas of unmoving memory, the raw-device I/O bench
//   - hw/hostmem: memfd/hugepage DRAM pools and their sharing, and
//     MemStore
//   - hw/bucket: the SSD tier's bucket store and its fault seams
//   - hw/accel: CUDA/HIP via purego (emulated without a GPU), the pinned
//     buffer pool, device stores
//   - hw/remote: the remote DRAM tier in a Redis or Valkey server
//   - hw/rdma, hw/rdmastore: libibverbs via purego, and the remote DRAM
//     tier in another node's DRAM over RDMA (kvsim serve's server)
//   - hw/doctor: what this machine has (doctor) and link calibration
//   - hw/payload: the deterministic block payloads
//
// Every fd, mapping and ring is owned by a value with Close. Features are
// probed once and fall back with a reported reason (io_uring -> pread/pwrite,
// hugepages -> 4 KiB pages in "try" mode). Linux-only pieces build on other
// systems as stubs that return ErrUnsupported.
//
// hw imports core and policy; never sim.
package hw
