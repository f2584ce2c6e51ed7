package cluster

import (
	"kvsim/core"
	"kvsim/sim"
)

// lagging is the cluster as a router sees it StaleNs late: an index of
// which tiers of each instance hold each block, fed by the cores'
// residency events (Dynamo's KV events: a worker publishes stored and
// removed blocks, the router's indexer applies them), and each instance's
// load as it was reported at the arrivals (SGLang's and Dynamo's routers
// poll or receive load metrics). An event or a report reaches the router
// StaleNs after it happened. Link backlogs in EstimateTTFT stay live.
type lagging struct {
	delay int64
	sims  []*sim.Sim
	where [][]uint8    // per instance, per block: what the router knows
	logs  [][]resEvent // per instance, in its time order, from heads[i]
	heads []int
	snaps []snapshot // load reports, in arrival order, from sh
	sh    int
	cur   []load // the latest report old enough to have arrived
}

type resEvent struct {
	t int64
	b core.Block
	w uint8
}

type snapshot struct {
	t     int64
	loads []load
}

func newLagging(delay int64, sims []*sim.Sim) *lagging {
	n := len(sims)
	return &lagging{delay: delay, sims: sims, where: make([][]uint8, n), logs: make([][]resEvent, n),
		heads: make([]int, n), cur: make([]load, n)}
}

// record is instance i's residency event (core.Config.OnResidency).
func (l *lagging) record(i int, b core.Block, w uint8) {
	l.logs[i] = append(l.logs[i], resEvent{t: l.sims[i].Now(), b: b, w: w})
}

// advance brings the router's knowledge to an arrival at now: events and
// load reports at most now - delay old are applied; the instances' loads
// now are reported, to be seen delay later.
func (l *lagging) advance(now int64) {
	cut := now - l.delay
	for i, log := range l.logs {
		h := l.heads[i]
		for ; h < len(log) && log[h].t <= cut; h++ {
			e := log[h]
			w := l.where[i]
			if int(e.b) >= len(w) {
				w = grownIndex(w, int(e.b)+1)
				l.where[i] = w
			}
			w[e.b] = e.w
		}
		if h > 4096 && 2*h > len(log) { // drop what was applied
			n := copy(log, log[h:])
			l.logs[i], h = log[:n], 0
		}
		l.heads[i] = h
	}
	var row []load
	if l.sh > 0 && l.sh == len(l.snaps) { // every report applied: reuse the rows
		row = l.snaps[0].loads[:0]
		l.snaps, l.sh = l.snaps[:0], 0
	}
	for _, s := range l.sims {
		row = append(row, liveLoad(s))
	}
	l.snaps = append(l.snaps, snapshot{t: now, loads: row})
	for l.sh < len(l.snaps) && l.snaps[l.sh].t <= cut {
		copy(l.cur, l.snaps[l.sh].loads)
		l.sh++
	}
}

func grownIndex(w []uint8, n int) []uint8 {
	t := make([]uint8, max(n, 2*len(w), 1024))
	copy(t, w)
	return t
}
