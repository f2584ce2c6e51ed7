// Package validate holds kvsim's engine model against a real serving run:
// it reads the per-request records of a run (LLMServingSim's bench folder,
// vLLM's benchmark result JSON, or a plain CSV; Load), replays their
// arrivals and lengths through a scenario's hardware and compares the
// predicted TTFT, TPOT and end-to-end latency with the measured ones,
// request by request (Run: means, percentiles, MAPE, bias and the
// two-sample Kolmogorov-Smirnov distance, in a Result). Result.Marshal
// and Result.Page are the comparison as JSON and as an HTML page.
//
// The records carry no prompt content, so every request gets blocks of its
// own: no prefix is reused, and the comparison is of the engine (batching,
// chunked prefill, step times), not of a cache.
//
// Like experiment, it prints nothing and never exits: bad input is an
// experiment.InputError naming the file, line and field. It builds the
// engine through experiment.SimConfig, as kvsim run does, and never
// imports hw: the replay is simulated.
package validate
