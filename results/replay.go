package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Replay is replay.json, what `kvsim replay --real` measured.
type Replay struct {
	Scenario   string            `json:"scenario"`
	Trace      string            `json:"trace"`
	Policy     string            `json:"policy"`
	Requests   int64             `json:"requests"`
	BlockBytes int               `json:"block_bytes"`
	Scale      float64           `json:"scale"`
	Backends   map[string]string `json:"backends"`
	Notes      []string          `json:"notes,omitempty"`
	// Stores says how each storage tier was opened: reopened with what a
	// previous run left (and how much of it the core was given), new, or
	// emptied by --fresh.
	Stores     map[string]ReplayStore `json:"stores,omitempty"`
	Links      map[string]ReplayLink  `json:"links"`
	Verify     *ReplayVerify          `json:"verify,omitempty"` // with --verify only
	Hits       map[string]int64       `json:"hits"`
	Misses     int64                  `json:"misses"`
	Evictions  map[string]int64       `json:"evictions"`
	Lost       map[string]int64       `json:"lost"`          // copies lost to I/O errors or corrupt payloads
	StoreEvict map[string]int64       `json:"store_evicted"` // blocks a store dropped to stay within its capacity
	Errors     []string               `json:"errors,omitempty"`
	Sequential bool                   `json:"sequential"` // own real clock, one request at a time, no simulator
	// Mode is how the real body ran: "live" (its own core and step
	// scheduler on the wall clock, moves concurrent), "mirror" (the
	// simulator's moves copied one at a time) or "sequential".
	Mode        string      `json:"mode,omitempty"`
	Live        *ReplayLive `json:"live,omitempty"` // mode live only
	WallSeconds float64     `json:"wall_seconds"`

	// LeftOnServer: keys a remote tier could not delete from its server
	// at the end (it stalled or went down), and how to remove them.
	LeftOnServer []ReplayLeft `json:"left_on_server,omitempty"`
}

// ReplayLive is what a live replay measured beside what the simulator
// predicts for the same scenario and trace.
type ReplayLive struct {
	Speedup float64 `json:"speedup"`
	Steps   int64   `json:"steps"`
	// KeptUp says the replay kept up with its clock: at most 1% of the
	// requests were Disturbed (their arrival taken up later than 5% of
	// their TTFT, or 1 ms if more); if not, Compare's error figures are
	// left out.
	KeptUp       bool  `json:"kept_up"`
	Disturbed    int   `json:"disturbed"`
	ArrivalLagMs LagMs `json:"arrival_lag_ms"`
	StepLagMs    LagMs `json:"step_lag_ms"`
	// Compare has, per metric (ttft, tpot, e2e, load_wait), the measured
	// and predicted mean and percentiles and the errors, in kvsim
	// validate's form; PerRequest each request's [measured, predicted].
	Compare json.RawMessage `json:"compare"`
	// Measured and Predicted are each run in summary.json's policy form
	// (the fields a single run of one instance fills).
	Measured   *Policy         `json:"measured"`
	Predicted  *Policy         `json:"predicted"`
	PerRequest json.RawMessage `json:"per_request,omitempty"`
	Notes      []string        `json:"notes,omitempty"`
}

// LagMs summarises a lag behind the clock, in ms.
type LagMs struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// ReplayLeft is what a remote tier left on its server.
type ReplayLeft struct {
	Tier    string `json:"tier"`
	Server  string `json:"server"`  // host:port
	Keys    int    `json:"keys"`    // at most this many
	Pattern string `json:"pattern"` // the keys' glob (SCAN MATCH)
	Remove  string `json:"remove"`  // a shell command that deletes them
	Why     string `json:"why"`
}

// ReplayLink is one entry of replay.json's links.
type ReplayLink struct {
	Count          int64   `json:"count"`  // moves whose copy was kept: the figures below are theirs
	Failed         int64   `json:"failed"` // moves whose read or write failed, or whose copy was lost later
	Bytes          int64   `json:"bytes"`
	P50us          float64 `json:"p50_us"`
	P99us          float64 `json:"p99_us"`
	GBps           float64 `json:"gbps"`
	PredictedP50us float64 `json:"predicted_p50_us"`
	RelError       float64 `json:"rel_error"`
}

// ReplayVerify is replay.json's verify: blocks read back and checked.
type ReplayVerify struct {
	Checked int64 `json:"checked"`
	Corrupt int64 `json:"corrupt"`
}

// ReplayStore is one storage tier of replay.json's stores.
type ReplayStore struct {
	Dir           string   `json:"dir"`
	State         string   `json:"state"`   // "new", "reopened" or "emptied" (--fresh)
	Buckets       int      `json:"buckets"` // sealed buckets recovered
	Blocks        int      `json:"blocks"`  // blocks recovered (before --fresh emptied them)
	Discarded     []string `json:"discarded,omitempty"`
	WarmBlocks    int      `json:"warm_blocks"`    // recovered blocks placed in the core's tier before the first request
	DroppedBlocks int      `json:"dropped_blocks"` // recovered blocks deleted: no model block has their size, or no room left
}

// WriteReplay writes r to path atomically and returns the bytes written
// (for --json).
func WriteReplay(path string, r *Replay) ([]byte, error) {
	b, err := MarshalJSON(r)
	if err != nil {
		return nil, err
	}
	return b, WriteFileAtomic(path, b)
}

// ReadReplay reads a replay.json.
func ReadReplay(path string) (*Replay, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Replay
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &r, nil
}

// CheckReplayPath refuses to let a replay.json replace a file at path that
// kvsim did not write; a missing file is fine.
func CheckReplayPath(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	var r map[string]json.RawMessage
	if json.Unmarshal(b, &r) != nil || r["links"] == nil || r["block_bytes"] == nil || r["backends"] == nil {
		return fmt.Errorf("replay: %s exists and is not a replay.json kvsim wrote; it will not be replaced: move it or give another --dir", path)
	}
	return nil
}
