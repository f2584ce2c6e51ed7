// Package rdma is the RDMA verbs path of the remote tiers: libibverbs
// loaded at run time without cgo (purego), device and port enumeration,
// memory registration split at the device's largest memory region,
// reliable-connected queue pairs between two processes whose connection
// data travel over a small TCP control connection, and one-sided RDMA READ
// and WRITE with completion polling.
//
// The struct offsets it relies on are in abi.go; docs/rdma.md explains why
// they are stable. Tests drive every call through a fake libibverbs built
// from C source with the system compiler, so the path is exercised on
// machines without an RDMA NIC.
package rdma
