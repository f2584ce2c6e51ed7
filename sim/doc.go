// Package sim is the virtual-time body: it carries out the core's commands
// on models of links (latency + size/bandwidth, work-conserving FIFO queues
// with parallel lanes that take a transfer only once its data is ready,
// optionally one pipe per tier that all its links share; see move.go and
// docs/links.md), a GPU (the batched engine of engine.go: steps of decodes
// and prefill chunks under a token budget, timed by a step model of
// step.go; or the simple engine of simple.go: prefill and decode rates,
// layer-wise or serial KV loading) and an integer-nanosecond event heap
// ordered by (time, sequence), so the same inputs always give the same
// outputs. Every event time stays within
// 0..core.MaxTime: a run that would pass it (a rate too slow or a trace too
// long for the other) stops with a *LimitError naming what is responsible,
// never a wrapped time.
//
// sim imports core and policy; never hw.
package sim
