// Package mrc computes miss-ratio curves: it replays a block-access trace
// through eviction policies at many cache sizes and counts misses.
//
// A trace is read once into a dense []int32 of block references plus the
// request boundaries (Trace). Block mode treats every reference as an access
// to a unit-size object in a cache of N blocks; a miss inserts the block,
// evicting while the cache is full. Prefix mode feeds the cache the same
// accesses and only counts differently: a reference hits when it and every
// earlier reference of its request hit, since KV blocks past the first miss
// must be recomputed anyway.
//
// (policy, size) pairs run in parallel on GOMAXPROCS goroutines and come
// back in a fixed order. LRU is also available as "lru-stack", an exact
// one-pass stack-distance algorithm (Mattson et al. 1970, with a Fenwick
// tree over last-access positions: O(log n) per access) that yields every
// size at once; Curve uses it for "lru" whenever more than one size is
// asked, since the results are identical (a test checks that at every size).
// Sample implements SHARDS-style spatial sampling (Waldspurger et al.,
// FAST'15) for traces too large to replay in full.
//
// A whole run of `kvsim mrc` is here too: sizes as written (ParseSizes,
// ResolveSizes: blocks or percentages of distinct blocks, capped to them),
// SampledCurve (a Curve on a sample, adjusted back) and BenchCurve (replay
// speed); the command only parses flags and prints.
//
// A policy that implements policy.Expecter is told each missing block
// before the evictions made for it, as ARC needs to follow its paper.
//
// Belady's oracle is a next-use index built from the trace: the clock a
// policy sees is the reference's position in the trace.
//
// Traces are read with kvsim/trace. This package imports only the
// standard library, kvsim/policy and kvsim/trace.
package mrc
