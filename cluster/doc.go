// Package cluster simulates a cluster of instances, each a sim.Sim with
// its own engine, HBM and node-scoped tiers, in one virtual time: a Router
// chooses the instance of each request as it arrives.
//
// The coordinator (Run) reads requests in arrival order; for each it
// advances every instance to the arrival (events due at that time run
// first), asks the router, and hands the request to the chosen instance.
// Optionally the instances share a pooled last tier (core.Pool, each block
// on one node), cross-node transfers pass through every node's NIC on a
// sim.Fabric, prefill and decode run on separate instances (a finished
// prefill's KV crosses the fabric into a decode instance's HBM), and the
// router sees the cluster late (lag.go). Coupled instances are stepped in
// one global event order (sim.Group). docs/cluster.md states the model and
// what it leaves out; docs/routers.md the routers.
//
// A router is one file, router_NAME.go, that registers a RouterSpec: its
// name, brief, rank in lists, its [cluster] keys (param.Key: type, range,
// default, doc) and a constructor. The scenario loader, --set and the
// scenario reference follow the registry, and its row of the table in
// docs/routers.md is rendered from the spec (scenario's TestDocTables);
// TestRouterRegistry asks for its section there.
package cluster
