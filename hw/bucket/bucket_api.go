package bucket

import (
	"errors"
	"fmt"

	"kvsim/hw/ioengine"
	"kvsim/hw/store"
)

// The Store's types, shared by the Linux store (bucket.go) and the
// stub elsewhere (bucket_other.go).

// StoreOptions configure a Store. Zero values take the defaults
// given; DefaultStoreOptions also turns Direct on.
type StoreOptions struct {
	Dir         string
	BucketBytes int64 // largest bucket data file; default 256 MiB (Mooncake). A bigger block gets a bucket of its own.
	MaxKeys     int   // most blocks per bucket; default 500 (Mooncake)
	Capacity    int64 // bucket data bytes (live, dead and padding, open bucket included) allowed on disk; 0: unlimited
	// Above HighWater*Capacity whole sealed buckets are evicted until the
	// data is at most LowWater*Capacity; defaults 0.90 and 0.80.
	HighWater, LowWater float64
	Evict               string // "fifo" (default): oldest bucket first; "lru": least recently read bucket first
	// Engine runs the I/O and stays the caller's. When nil the store makes
	// one from EngineMode ("pread" by default, or "auto"/"io_uring", see
	// NewEngine) with its own buffers registered, and closes it.
	Engine     ioengine.Engine
	EngineMode string
	// Direct opens bucket data files O_DIRECT. Where the filesystem refuses
	// (tmpfs), the store falls back to buffered I/O and OpenReport says why.
	Direct       bool
	QueueDepth   int // I/O requests in flight; default 32
	WriteBuffer  int // open-bucket bytes held in memory; default min(BucketBytes, QueueDepth MiB), so a flush is QueueDepth 1 MiB writes
	MaxOpenFiles int // sealed data files kept open for reads; default 256
	// FS, when set, routes the store's file-system calls (opens, stats,
	// renames, unlinks, directory fsyncs) through a FaultFS, to test
	// transient failures; nil is the plain file system.
	FS *FaultFS
}

// DefaultStoreOptions are Mooncake's defaults with O_DIRECT on.
func DefaultStoreOptions(dir string) StoreOptions {
	return StoreOptions{Dir: dir, Direct: true, BucketBytes: DefaultBucketBytes}
}

// DefaultBucketBytes is a bucket's data file at most (Mooncake's).
const DefaultBucketBytes = 256 << 20

// OpenReport says what Open found and chose.
type OpenReport struct {
	Buckets, Blocks int // sealed buckets and live blocks recovered
	// DiscardedBuckets has "bucket-<id>: reason" for each bucket dropped
	// whole: a data file never sealed (crash residue: nothing in it was
	// ever durable; removed) or a bucket with proven damage and nothing to
	// recover (moved to DIR/quarantine, not deleted).
	DiscardedBuckets []string
	// DamagedBuckets has "bucket-<id>: what was wrong; what was kept" for
	// each bucket kept with the blocks whose own entries still verify; the
	// damaged metadata file is kept in DIR/quarantine.
	DamagedBuckets  []string
	RecoveredBlocks int      // live blocks kept from DamagedBuckets
	Quarantined     []string // files moved (or linked) into DIR/quarantine, relative to DIR
	Direct          bool     // data files use O_DIRECT
	DirectNote      string   // why not, when Direct was asked for
	Align           int      // block alignment within data files
	Engine          string   // the engine's name
	EngineNote      string   // why NewEngine fell back, if it did
}

// StoreStats are a Store's counters.
type StoreStats struct {
	LiveBlocks     int   // blocks Get can serve
	LiveBytes      int64 // their payload bytes
	DiskBytes      int64 // data file bytes (live, dead, padding; open bucket included): what Capacity bounds
	MetaBytes      int64 // metadata file bytes
	Buckets        int   // sealed buckets on disk
	OpenBlocks     int   // live blocks in the open (unsealed) bucket
	EvictedBuckets int64
	EvictedBlocks  int64
	FailedBuckets  int64 // buckets whose write failed; their blocks were dropped
	LostBlocks     int64 // live blocks dropped with them
	WriteErrors    int64
	ReadErrors     int64
	ChecksumErrors int64
	BytesWritten   int64 // data and metadata
	BytesRead      int64
}

// Errors from the store. I/O errors come wrapped in *BucketError, so
// errors.Is(err, unix.ENOSPC) and the like work.
var (
	ErrBucketNotFound = fmt.Errorf("bucket store: %w", store.ErrNotStored)
	ErrBucketChecksum = errors.New("bucket store: block checksum mismatch")
	ErrBucketClosed   = fmt.Errorf("bucket store: %w", store.ErrClosed)
	ErrBucketShortDst = errors.New("bucket store: destination smaller than the block")
)

// BucketError is an I/O or integrity failure of one bucket.
type BucketError struct {
	Bucket uint64
	Op     string // "write data", "sync data", "write metadata", "read", "verify", "create"
	Key    uint64 // for read and verify
	Err    error
}

func (e *BucketError) Error() string {
	if e.Op == "read" || e.Op == "verify" {
		return fmt.Sprintf("bucket %016x: %s key %#x: %v", e.Bucket, e.Op, e.Key, e.Err)
	}
	return fmt.Sprintf("bucket %016x: %s: %v", e.Bucket, e.Op, e.Err)
}

func (e *BucketError) Unwrap() error { return e.Err }

// bucketSyncer lets an engine see (or fault) the store's fdatasyncs.
type bucketSyncer interface{ Fdatasync(fd int) error }
