package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"kvsim/core"
	"kvsim/events"
	"kvsim/scenario"
)

// eventsFlags are kvsim run's --publish-events and its companions.
type eventsFlags struct {
	endpoint string
	encoding string
	pace     string
	policy   string
	linger   time.Duration
	hash     string
	seed     string
}

func addEventsFlags(fs interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}, e *eventsFlags) {
	fs.StringVar(&e.endpoint, "publish-events", "", "publish every instance's KV events in vLLM's format: instance i at `tcp://HOST:PORT`+i,\nits replay socket at PORT+instances+i (overrides [cluster] events; docs/events.md)")
	fs.StringVar(&e.encoding, "events-encoding", "map", "events as tagged `map`s (vLLM since tagged maps) or tagged arrays (array, older vLLM)")
	fs.StringVar(&e.pace, "events-pace", "max", "simulated time at most `X` times the wall clock, dropping (counting) frames a stalled\nsubscriber cannot take; max: no pacing, the simulation waits for the sockets")
	fs.StringVar(&e.policy, "events-policy", "", "the [[policy]] `NAME` whose cluster publishes (default: the first)")
	fs.DurationVar(&e.linger, "events-linger", time.Second, "after the run, keep serving replay requests this long (`D`; an interrupt ends it)")
	fs.StringVar(&e.hash, "events-hash", "kvsim", "block hashes: `kvsim` (block ids mixed to 64 bits) or vllm (vLLM's sha256_cbor chain of the\ntrace's token_ids, with token_ids and parent_block_hash; a Mooncake JSONL trace; docs/events.md)")
	fs.StringVar(&e.seed, "events-hash-seed", "0", "with --events-hash vllm, the engines' PYTHONHASHSEED (`S`): NONE_HASH = sha256_cbor(S)")
}

// eventsPublished hears each scenario's publisher once its run ended
// (tests read the residency it published).
var eventsPublished = func(*events.Publisher) {}

// tierMedium is the medium vLLM would name a tier of this kind.
func tierMedium(kind string) string {
	switch kind {
	case "hbm":
		return "GPU"
	case "pinned", "dram":
		return "CPU"
	}
	return "STORAGE"
}

// checkEventsFlags validates the flags once, before any scenario runs.
func (e *eventsFlags) check() (events.Encoding, float64, error) {
	enc := events.EncMap
	switch e.encoding {
	case "map":
	case "array":
		enc = events.EncArray
	default:
		return 0, 0, badInputf("run: --events-encoding: want map or array, got %q", e.encoding)
	}
	pace := 0.0
	if e.pace != "max" {
		f, err := strconv.ParseFloat(e.pace, 64)
		if err != nil || !(f > 0) || f > 1e12 {
			return 0, 0, badInputf("run: --events-pace: want max or a positive speed factor, got %q", e.pace)
		}
		pace = f
	}
	if e.linger < 0 {
		return 0, 0, badInputf("run: --events-linger: must be >= 0, got %v", e.linger)
	}
	if e.hash != "kvsim" && e.hash != "vllm" {
		return 0, 0, badInputf("run: --events-hash: want kvsim or vllm, got %q", e.hash)
	}
	if e.endpoint != "" {
		if _, _, err := events.SplitEndpoint(e.endpoint); err != nil {
			return 0, 0, badInputf("run: --publish-events: %v", err)
		}
	}
	return enc, pace, nil
}

// startEvents binds sc's publisher when it publishes; the hook goes to
// experiment.Options.OnResidency, finish reports and closes.
func startEvents(ctx context.Context, sc *scenario.Scenario, e *eventsFlags, stderr io.Writer) (hook func(int) func(int, int64, core.Block, uint8), finish func(), err error) {
	ep := e.endpoint
	if ep == "" {
		ep = sc.Cluster.Events
	}
	if ep == "" {
		return nil, func() {}, nil
	}
	enc, pace, err := e.check()
	if err != nil {
		return nil, nil, err
	}
	pol := 0
	if e.policy != "" {
		pol = slices.IndexFunc(sc.Policies, func(p scenario.Policy) bool { return p.Name == e.policy })
		if pol < 0 {
			return nil, nil, badInputf("run: --events-policy: scenario %s has no policy %q", sc.Name, e.policy)
		}
	}
	n := max(sc.Cluster.Instances, 1)
	media := make([]string, len(sc.Tiers))
	for i, t := range sc.Tiers {
		media[i] = tierMedium(t.Kind)
	}
	popt := events.PublishOptions{Endpoint: ep, Instances: n, Media: media,
		BlockTokens: sc.Model.BlockTokens, Encoding: enc, Pace: pace}
	if e.hash == "vllm" {
		w := sc.Workload
		if w.Format != "" && w.Format != "mooncake" && w.Format != "kvevents" || w.SkipBadLines || w.Inject != nil {
			return nil, nil, badInputf("run: --events-hash vllm: scenario %s: needs a Mooncake JSONL trace or a kvevents log, read as written (no skip_bad_lines, no inject)", sc.Name)
		}
		if popt.Name, err = vllmNamerFile(w.Trace, w.Format, sc.Model.BlockTokens, e.seed); err != nil {
			return nil, nil, badInputf("run: --events-hash vllm: %v", err)
		}
	}
	p, err := events.NewPublisher(popt)
	if err != nil {
		return nil, nil, badInputf("run: publish events: %v", err)
	}
	fmt.Fprintf(stderr, "kvsim run: %s: publishing policy %q's KV events at %s (%d instance(s), %s encoding, %s hashes)\n", sc.Name, sc.Policies[pol].Name, ep, n, enc, e.hash)
	hook = func(i int) func(int, int64, core.Block, uint8) {
		if i != pol {
			return nil
		}
		return func(inst int, now int64, b core.Block, w uint8) { p.Observe(inst, now, int64(b), w) }
	}
	finish = func() {
		s, err := p.Flush()
		fmt.Fprintf(stderr, "kvsim run: %s: published %d batches, %d events (%d dropped by pacing, %d while a subscriber stalled); serving replays for %v\n", sc.Name, s.Frames, s.Events, s.Dropped, s.Stalled, e.linger)
		if err != nil {
			fmt.Fprintf(stderr, "kvsim run: %s: publishing: %v\n", sc.Name, err)
		}
		eventsPublished(p)
		select {
		case <-time.After(e.linger):
		case <-ctx.Done():
		}
		p.Close()
	}
	return hook, finish, nil
}

// vllmNamer reads the token_ids of a Mooncake JSONL trace and names each
// of its blocks by vLLM's chained hash. Blocks are numbered as the run
// numbers them: raw hash_ids by first sight, in file order. A block past
// the last full one of its prompt (vLLM never hashes a partial block) or
// of a line without token_ids keeps kvsim's hash and publishes no tokens.
func vllmNamer(path string, blockTokens int, seed string) (func(int64) events.BlockName, error) {
	return vllmNamerFile(path, "mooncake", blockTokens, seed)
}

// vllmNamerFile reads a Mooncake JSONL trace, or a kvevents log as the
// run reads it (converted to Mooncake JSONL, with the token_ids its
// BlockStored events carried).
func vllmNamerFile(path, format string, blockTokens int, seed string) (func(int64) events.BlockName, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var src io.Reader = f
	if format == "kvevents" {
		var buf bytes.Buffer
		if err := events.ToTrace(f, path, blockTokens, &buf); err != nil {
			return nil, err
		}
		src = &buf
	}
	none := events.VLLMNoneHash(seed)
	type block struct {
		full   [32]byte
		tokens []int64
		parent int64
	}
	var blocks []block
	ids := map[int64]int64{}
	sc := bufio.NewScanner(src)
	sc.Buffer(nil, 1<<30)
	for line := 1; sc.Scan(); line++ {
		var l struct {
			HashIDs  []int64 `json:"hash_ids"`
			TokenIDs []int64 `json:"token_ids"`
		}
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		parent, ph := int64(-1), none
		for k, raw := range l.HashIDs {
			lo, hi := k*blockTokens, (k+1)*blockTokens
			var b block
			b.parent = parent
			if hi <= len(l.TokenIDs) {
				b.tokens = l.TokenIDs[lo:hi]
				b.full = events.VLLMBlockHash(ph, b.tokens)
			}
			id, seen := ids[raw]
			switch {
			case !seen:
				id = int64(len(blocks))
				ids[raw] = id
				blocks = append(blocks, b)
			case b.tokens != nil && blocks[id].tokens != nil && b.full != blocks[id].full:
				return nil, fmt.Errorf("%s:%d: hash_ids[%d] = %d: its tokens and prefix hash differently from where it appeared first: not a chained-prefix id", path, line, k, raw)
			case b.tokens != nil && blocks[id].tokens == nil:
				blocks[id] = b
			}
			parent, ph = id, blocks[id].full
			if blocks[id].tokens == nil {
				ph = none // nothing chains past an unhashed block
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return func(b int64) events.BlockName {
		if b < 0 || b >= int64(len(blocks)) || blocks[b].tokens == nil {
			return events.BlockName{Hash: events.BlockHash(b), Parent: -1}
		}
		return events.BlockName{Hash: events.VLLMHash64(blocks[b].full), Tokens: blocks[b].tokens, Parent: blocks[b].parent}
	}, nil
}
