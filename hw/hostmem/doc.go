// Package hostmem is host memory for the tiers: memfd and hugepage pools, their
// sharing with other processes over a Unix socket, and the Store contract
// every tier implements with MemStore, which carves memory into slots.
package hostmem
