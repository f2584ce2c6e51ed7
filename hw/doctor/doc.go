// Package doctor checks and measures this machine for the real body:
// Run lists what is there (hugepages, io_uring, O_DIRECT, memlock, GPUs,
// RDMA, NVMe) and how to fix what is missing; MeasureMoves fits a link's
// cost from timed moves between two stores.
package doctor
