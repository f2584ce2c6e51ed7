// Package policy holds the one contract every cache strategy implements and
// the strategies themselves.
//
// A policy decides which resident block a tier gives up when it needs room.
// It is single-threaded, never reads a clock (time arrives as an argument, in
// integer nanoseconds of whatever clock the caller keeps, or as a logical
// access counter), never starts goroutines and never calls a backend. That is
// what lets the same code drive the simulator and the real driver layer.
//
// Blocks are dense int32 indices (0..n-1) assigned by the trace reader, so
// policies keep per-block state in slices with intrusive links and allocate
// nothing per access once those slices have grown.
//
// This package imports only the standard library.
package policy
