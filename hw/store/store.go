// Package store is the contract between the real body and the stores that
// hold a tier's blocks (memory, memfd pools, bucket stores, block devices,
// device memory, Redis or Valkey, RDMA): Store, which every one
// implements, and the optional capabilities some add, each a named
// interface that a store declares with a compile-time assertion
//
//	var _ store.Flusher = (*Store)(nil)
//
// and a caller finds with a type assertion to that interface. The
// conformance suite (package storetest) checks the contract and each
// capability a store declares; docs/stores.md has the table of which
// store has which.
package store

import "errors"

// Store holds the blocks of one tier, keyed by block id.
//
// Put(b, data) stores a copy of data under b (the caller may reuse data
// when Put returns); a block already held is replaced. A negative b, or
// data larger than the store's block size, is an error. Zero-length
// blocks are allowed. A Put that fails leaves b either as it was or not
// held; never partly written. Its success may be provisional for a
// Dropper (see there).
//
// Get(b, dst) copies b into dst and returns its length n; what dst holds
// beyond n is unspecified. A block not held is an error that
// errors.Is(err, ErrNotStored); so is one the store finds gone behind its
// back (a server's eviction, a restart): lost, not corrupt. A block whose
// bytes fail the store's check, or a dst shorter than the block, is
// another error, and a corrupt block is never copied.
//
// Delete(b) forgets b; of a block not held it does nothing. Has(b)
// reports whether the store holds b as far as it knows: a remote store
// learns of a loss at the next Get or Flush.
//
// Close releases everything the store holds (a durable store keeps its
// blocks on disk). After Close, Put and Get fail with an error that
// errors.Is(err, ErrClosed), Has is false, Delete does nothing, Backend
// still answers, and a second Close returns nil. Nothing panics.
//
// A Store is driven from one goroutine, unless it is Concurrent.
type Store interface {
	// Backend names the path this tier really uses, e.g. "emulated",
	// "memfd+hugetlb-2MB", "io_uring+O_DIRECT".
	Backend() string
	Put(b int32, data []byte) error
	Get(b int32, dst []byte) (int, error)
	Delete(b int32)
	Has(b int32) bool
	Close() error
}

// ErrNotStored is (wrapped in) Get's error for a block the store does not
// hold, or found gone.
var ErrNotStored = errors.New("block not stored")

// ErrClosed is (wrapped in) the error of a Put or Get after Close.
var ErrClosed = errors.New("store closed")

// Flusher is a store with work or checks that wait for Flush: a durable
// store makes every block it accepted durable (a bucket store seals its
// open bucket), a remote one sends its queued deletes and checks that its
// server still holds every block. What Flush finds lost is reported by
// the store's Dropper or LossReporter when it returns; an error says the
// flush did not complete (those reports still hold).
type Flusher interface {
	Flush() error
}

// Recoverer is a durable store: what it held when closed it holds again
// when reopened on the same place, except blocks a torn or failed write
// left damaged, which it discards (never serves). Blocks lists what it
// holds, recovered blocks included, in key order, with their sizes.
type Recoverer interface {
	Blocks() (keys []int32, sizes []int)
}

// Dropper is a store that drops blocks on its own: evicted to stay within
// its capacity, or lost with a write that failed after Put returned (it
// buffers writes: a Put's success is provisional until the next Flush
// returns). Dropped returns and forgets the blocks dropped since the last
// call; when the store cannot tell which was which it reports them all as
// failed (a loss may be over-reported, never hidden). A dropped block is
// no longer held.
type Dropper interface {
	Dropped() (evicted, failed []int32)
}

// LossReporter is a store that can lose blocks behind its back (a server
// that evicts, flushes or restarts) and finds out at Flush. Lost returns
// and forgets the blocks found gone since the last call; they are no
// longer held. A Get that finds a block gone reports it by its error
// (ErrNotStored) instead.
type LossReporter interface {
	Lost() []int32
}

// Concurrent is a store whose Put, Get, Delete and Has may be called from
// many goroutines at once (capabilities and Close stay with one).
// ConcurrentSafe does nothing: it is the declaration.
type Concurrent interface {
	ConcurrentSafe()
}

// Capabilities names the capabilities s declares, in the order of
// docs/stores.md's table.
func Capabilities(s Store) []string {
	var out []string
	if _, ok := s.(Flusher); ok {
		out = append(out, "Flusher")
	}
	if _, ok := s.(Recoverer); ok {
		out = append(out, "Recoverer")
	}
	if _, ok := s.(Dropper); ok {
		out = append(out, "Dropper")
	}
	if _, ok := s.(LossReporter); ok {
		out = append(out, "LossReporter")
	}
	if _, ok := s.(Concurrent); ok {
		out = append(out, "Concurrent")
	}
	return out
}
