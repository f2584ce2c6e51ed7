package main

import (
	"context"
	"fmt"
	"io"
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
	p, err := events.NewPublisher(events.PublishOptions{Endpoint: ep, Instances: n, Media: media,
		BlockTokens: sc.Model.BlockTokens, Encoding: enc, Pace: pace})
	if err != nil {
		return nil, nil, badInputf("run: publish events: %v", err)
	}
	fmt.Fprintf(stderr, "kvsim run: %s: publishing policy %q's KV events at %s (%d instance(s), %s encoding)\n", sc.Name, sc.Policies[pol].Name, ep, n, enc)
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
