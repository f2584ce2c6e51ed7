package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kvsim/events"
	"kvsim/internal/testenv"
)

// vllmHashTrace writes a Mooncake JSONL trace whose lines carry token_ids:
// three system prompts of four 16-token blocks shared by requests, each
// with its own user tokens; hash_ids are chained-prefix ids derived from
// the tokens, one per 16 tokens (the last may be partial).
func vllmHashTrace(t *testing.T, path string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	ids := map[string]int64{}
	var b strings.Builder
	for i := range 60 {
		toks := make([]int64, 0, 200)
		sys := int64(i % 3)
		for k := range 64 {
			toks = append(toks, 1000*sys+int64(k))
		}
		for range 20 + r.IntN(60) {
			toks = append(toks, 100000+r.Int64N(50000))
		}
		var hs []int64
		for k := 0; k < len(toks); k += 16 {
			key := fmt.Sprint(toks[:min(k+16, len(toks))])
			id, ok := ids[key]
			if !ok {
				id = int64(len(ids)) + 7000
				ids[key] = id
			}
			hs = append(hs, id)
		}
		line, _ := json.Marshal(map[string]any{"timestamp": i * 200, "input_length": len(toks), "output_length": 8, "hash_ids": hs, "token_ids": toks})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With --events-hash vllm, every block kvsim publishes with tokens is
// named as vLLM names it: an indexer written in Python that hashes the
// trace's prompts with cbor2 and hashlib finds every published hash among
// its own, with the block's tokens and its parent.
func TestEventsPublishVLLMHashes(t *testing.T) {
	needPyZMQ(t)
	if err := exec.Command(sysPython, "-c", "import cbor2").Run(); err != nil {
		testenv.Missing(t, "%s cannot import cbor2 (apt-get install python3-cbor2): %v", sysPython, err)
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "prompts.jsonl")
	vllmHashTrace(t, trace)
	scen := filepath.Join(dir, "vllm.toml")
	os.WriteFile(scen, []byte(`name = "vllm_hash"
seed = 1
[model]
preset = "llama-3.1-8b"
block_tokens = 16
[gpu]
preset = "h100"
[[tier]]
name = "hbm"
kind = "hbm"
capacity = "64MiB"
[[tier]]
name = "dram"
kind = "dram"
capacity = "1GiB"
[workload]
trace = "prompts.jsonl"
[cluster]
instances = 2
[[policy]]
eviction = "lru"
`), 0o644)
	log := recordRun(t, scen, filepath.Join(dir, "ev.log"), "--events-hash", "vllm", "--events-hash-seed", "0")
	// The stored events, as recorded.
	type pub struct {
		Hashes []uint64 `json:"hashes"`
		Parent *uint64  `json:"parent"`
		Tokens []int64  `json:"tokens"`
	}
	var withTokens []pub
	var blocks, bare int
	for _, ev := range storedEvents(t, log) {
		if len(ev.TokenIDs) == 0 {
			bare += len(ev.Hashes)
			continue
		}
		p := pub{Hashes: ev.Hashes, Tokens: ev.TokenIDs}
		if ev.HasParent {
			p.Parent = &ev.Parent
		}
		withTokens = append(withTokens, p)
		blocks += len(ev.Hashes)
	}
	js, _ := json.Marshal(withTokens)
	pubPath := filepath.Join(dir, "published.json")
	os.WriteFile(pubPath, js, 0o644)
	out, err := exec.Command(sysPython, "testdata/events/vllm_hashes.py", trace, "16", "0", pubPath).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var res struct {
		Blocks int
		Bad    []string
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if blocks == 0 || res.Blocks != blocks || len(res.Bad) > 0 {
		t.Errorf("published %d stored blocks with tokens, the indexer checked %d: %v", blocks, res.Blocks, res.Bad)
	}
	t.Logf("%d stored blocks named by vLLM's hash, all agreeing; %d partial blocks with kvsim's hash and no tokens", blocks, bare)

	// The recording replayed as a trace (format = "kvevents") keeps the
	// events' token_ids, so a second run names its blocks by the hashes
	// the first published: kvsim's hash of the tokens is the engine's.
	scen2 := filepath.Join(dir, "replay.toml")
	b, _ := os.ReadFile(scen)
	os.WriteFile(scen2, bytes.Replace(b, []byte(`trace = "prompts.jsonl"`), []byte("trace = \"ev.log\"\nformat = \"kvevents\""), 1), 0o644)
	first := map[uint64]bool{}
	for _, p := range withTokens {
		for _, h := range p.Hashes {
			first[h] = true
		}
	}
	log2 := recordRun(t, scen2, filepath.Join(dir, "ev2.log"), "--events-hash", "vllm")
	var again, other int
	for _, ev := range storedEvents(t, log2) {
		if len(ev.TokenIDs) == 0 {
			continue
		}
		for _, h := range ev.Hashes {
			if first[h] {
				again++
			} else {
				other++
			}
		}
	}
	if again == 0 || other > 0 {
		t.Errorf("replaying the recording: %d stored blocks with tokens named as the first run named them, %d not", again, other)
	}
	t.Logf("replayed as a kvevents trace: %d stored blocks with tokens, all named as in the first run", again)
}

// recordRun records kvsim run's events for scen (2 instances) into log.
func recordRun(t *testing.T, scen, log string, args ...string) string {
	t.Helper()
	base := freePorts(t, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var recErr bytes.Buffer
	recDone := make(chan error, 1)
	recArgs := []string{"events", "record", "--out", log, "--flush", "20ms", "--quiet"}
	for i := range 2 {
		recArgs = append(recArgs, "--endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", base+i), "--replay", fmt.Sprintf("tcp://127.0.0.1:%d", base+2+i))
	}
	go func() { recDone <- run(ctx, recArgs, io.Discard, &recErr) }()
	defer func(f func(*events.Publisher)) { eventsPublished = f }(eventsPublished)
	eventsPublished = func(p *events.Publisher) {
		for i := range 2 {
			waitForInstSeq(t, log, uint32(i), p.Batches(i)-1, func() bool { return len(recDone) == 0 })
		}
		cancel()
		<-recDone
	}
	var stderr bytes.Buffer
	runArgs := append([]string{"run", "--quiet", "--out", t.TempDir(), "--events-linger", "0s",
		"--publish-events", fmt.Sprintf("tcp://127.0.0.1:%d", base)}, args...)
	if err := run(context.Background(), append(runArgs, scen), io.Discard, &stderr); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	return log
}

// storedEvents are the BlockStored events of the log at path.
func storedEvents(t *testing.T, path string) []events.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := events.NewReader(f, path)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	for {
		var rec events.Record
		if rd.Next(&rec) != nil {
			return out
		}
		if rec.Type != events.RecFrame {
			continue
		}
		b, err := events.Decode(rec.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range b.Events {
			if ev.Kind == events.Stored {
				out = append(out, ev)
			}
		}
	}
}

// The namer numbers blocks as the run does and refuses a hash_id whose
// tokens differ where it appears again; partial blocks and lines without
// token_ids keep kvsim's hash.
func TestVLLMNamer(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"timestamp":0,"input_length":5,"output_length":1,"hash_ids":[9,4,5],"token_ids":[1,2,3,4,5]}
{"timestamp":1,"input_length":4,"output_length":1,"hash_ids":[9,6],"token_ids":[1,2,7,8]}
{"timestamp":2,"input_length":2,"output_length":1,"hash_ids":[8]}
`), 0o644)
	name, err := vllmNamer(good, 2, "0")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := events.VLLMBlockHashes("0", []int64{1, 2, 3, 4}, 2)
	b, _ := events.VLLMBlockHashes("0", []int64{1, 2, 7, 8}, 2)
	// Dense ids by first sight: 9 -> 0, 4 -> 1, 5 -> 2, 6 -> 3, 8 -> 4.
	for _, c := range []struct {
		id     int64
		hash   [32]byte
		parent int64
		tokens []int64
	}{{0, a[0], -1, []int64{1, 2}}, {1, a[1], 0, []int64{3, 4}}, {3, b[1], 0, []int64{7, 8}}} {
		if n := name(c.id); n.Hash != events.VLLMHash64(c.hash) || n.Parent != c.parent || !slices.Equal(n.Tokens, c.tokens) {
			t.Errorf("block %d: %+v, want hash %d parent %d tokens %v", c.id, n, events.VLLMHash64(c.hash), c.parent, c.tokens)
		}
	}
	for _, id := range []int64{2, 4} { // a partial block; a line without tokens
		if n := name(id); n.Hash != events.BlockHash(id) || n.Tokens != nil {
			t.Errorf("block %d: %+v, want kvsim's hash and no tokens", id, n)
		}
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"hash_ids":[9],"token_ids":[1,2]}
{"hash_ids":[9],"token_ids":[1,3]}
`), 0o644)
	if _, err := vllmNamer(bad, 2, "0"); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2: hash_ids[0] = 9") {
		t.Errorf("inconsistent ids: %v", err)
	}
}
