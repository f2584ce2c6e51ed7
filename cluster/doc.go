// Package cluster simulates a cluster of instances, each a sim.Sim with
// its own engine, HBM and copy of every declared tier, in one virtual
// time: a Router chooses the instance of each request as it arrives.
//
// The coordinator (Run) reads requests in arrival order; for each it
// advances every instance to the arrival (events due at that time run
// first), asks the router, and hands the request to the chosen instance.
// Instances share nothing in this model: every tier is node-scoped. A
// pooled tier (scope "cluster"), NIC links between nodes and
// prefill/decode disaggregation are later additions; they belong between
// the router's decision and the instance's Arrive (a transfer of the
// cached prefix from the pool or another node before admission), and in a
// shared core for the pooled tier.
package cluster
