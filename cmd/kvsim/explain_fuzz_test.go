package main

import (
	"io"
	"testing"

	"kvsim/results"
)

// FuzzExplainLog: whatever log ParseEvents accepts, explain's request,
// block and summary views return an answer or an error, never a panic.
func FuzzExplainLog(f *testing.F) {
	l := &results.EventLog{
		Header: results.EventsHeader{RunID: "x", Tiers: []string{"hbm", "dram"}, Links: []string{"hbm->dram"},
			Policies: []results.EventsPolicy{{Name: "lru", Max: 100}}},
		Events: [][]results.Event{{
			{Time: 0, Seq: 0, Block: -1, A: 1000, B: 1, Kind: 1},
			{Time: 0, Seq: 0, Block: 0, Kind: 15, Aux: 2},
			{Time: 0, Seq: 0, Block: 0, Kind: 3, From: 1, To: 0, A: 1000},
			{Time: 1, Seq: 0, Block: 0, Kind: 4, From: 1, To: 0, A: 0, B: 0},
			{Time: 0, Seq: 0, Block: -1, Kind: 7, A: 999, B: 1},
			{Time: 0, Seq: 0, Block: -1, Kind: 8, A: 999, B: 5},
			{Time: 2, Seq: 0, Block: 0, Kind: 5, From: 1, To: 0},
			{Time: 2, Seq: -1, Block: 0, Kind: 9, A: 3, B: 1, Aux: 1},
			{Time: 2, Seq: 0, Block: -1, Kind: 10, A: 1},
			{Time: 3, Seq: 0, Block: -1, Kind: 11},
			{Time: 3, Seq: 0, Block: -1, Kind: 12},
			{Time: 4, Seq: -1, Block: 0, Kind: 6, From: 0},
		}},
	}
	b, err := results.AppendEvents(nil, l)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	// The same records as a cluster's two instances' logs.
	l.Header.Policies[0].Instances = []int64{5, 7}
	if b, err = results.AppendEvents(nil, l); err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := results.ParseEvents(data)
		if err != nil {
			return
		}
		lg := &eventLog{EventLog: l, dir: "d"}
		explainSummary(io.Discard, lg, "", -1)
		for pi := range l.Events {
			for inst := range l.InstanceCount(pi) {
				for _, id := range []int64{0, 1} {
					explainRequest(io.Discard, lg, pi, inst, id)
					explainBlock(io.Discard, lg, pi, inst, id)
				}
			}
		}
	})
}
