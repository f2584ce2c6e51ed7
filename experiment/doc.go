// Package experiment runs kvsim's experiments as a library: it turns a
// loaded scenario into the core's and the simulator's configurations,
// simulates the scenario's policies in parallel over its trace and
// summarises them (Run), replays one policy on real memory and storage
// (Replay, DefaultReplayScenario), runs sweeps (LoadSweep, Sweep.Run,
// SweepOrder), and reads a trace whole for its statistics and for the
// injection that reproduces its reuse (ReadTraceData, TraceData.Stats,
// TraceData.Fit). Results are the results package's types and files;
// per-request records come through Options.OnRecord.
//
// It prints nothing and never exits: errors say what went wrong and are
// of a kind a caller can act on: *InputError for bad input (a trace, a
// value), ctx's error when interrupted, *LossError (from CheckLoss) for a
// replay that lost copies, anything else for the machine.
package experiment
