// Package hw is the real-hardware body: it carries out the core's moves on
// real memory and storage (memfd/hugepage DRAM pools, io_uring + O_DIRECT
// bucket files, emulated HBM and pinned tiers where no GPU is present) and
// measures what each move costs.
//
// Every fd, mapping and ring is owned by a value with Close. Features are
// probed once and fall back with a reported reason (io_uring -> pread/pwrite,
// hugepages -> 4 KiB pages in "try" mode). Linux-only pieces build on other
// systems as stubs that return ErrUnsupported.
//
// hw imports core and policy; never sim.
package hw
