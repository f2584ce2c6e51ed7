// Package core is the hierarchy brain shared by the simulator and the real
// driver layer: block residency per tier, byte capacities, pins on blocks in
// use, longest-usable-prefix lookup, admission of requests into HBM, and what
// happens on eviction (demote or drop) and on a lower-tier hit (promote).
//
// Core is an event-driven state machine. It never reads a clock and never
// waits: a body (sim or hw) feeds it arrivals and completions, each with
// `now` in integer nanoseconds of the body's clock, and carries out the
// commands Core issues through the Mover interface.
//
// With Config.HoldEvicted an evicted block's HBM stays allocated (draining)
// until the body reports through Drained that its copy has left HBM;
// admission and KV growth wait for such memory rather than reject or
// preempt, and used + draining HBM never exceeds the capacity.
//
// core imports policy and the standard library only; never sim or hw.
package core
