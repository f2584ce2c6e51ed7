// Package trace reads and writes request traces in the Mooncake JSONL format:
// one object per line,
//
//	{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}
//
// with the arrival time in milliseconds (integer or decimal, from any origin:
// the reader rebases arrivals to the first request's timestamp, so epoch
// times work; timestamps must not decrease), token counts, and one
// chained-prefix hash id per block of input (512 tokens by default): equal
// ids at the same position mean an identical prefix up to and including
// that block.
//
// The reader is a hand-rolled streaming parser because traces are replayed
// many times per experiment: it allocates nothing per line once its buffers
// have grown. Dict turns raw ids into the dense int32 block indices that the
// policies and the core key their slices by. Generate writes a deterministic
// synthetic multi-turn chat workload in the same format; Generated reads it
// without the JSON, as a Reader like any file's, so run, mrc and Stats take
// a generated trace and a file the same way. Counts are what they count.
//
// Other formats (Options.Format) are read by the same Reader: Bailian
// JSONL (16-token block hashes, chained and regrouped, bailian.go), and the
// Azure and BurstGPT CSV traces, which carry no block ids (csv.go). Each
// format is one file, format_NAME.go, registering a FormatSpec (name,
// binary-cache ID, the reference's words, its line parser; a CSV format
// just its columns and clock) with a fixture under testdata, whose golden
// TestFormatsCovered demands.
// Convert and OpenCached keep a binary form of a trace (.kvtc, cache.go)
// that reads back to exactly the same requests without parsing.
//
// This package imports only the standard library.
package trace
