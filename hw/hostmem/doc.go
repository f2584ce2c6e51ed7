// Package hostmem is host memory for the tiers: memfd and hugepage pools, their
// sharing with other processes over a Unix socket, and MemStore, the
// store (kvsim/hw/store's contract) that carves memory into slots.
package hostmem
