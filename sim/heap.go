package sim

type evKind uint8

const (
	evArrival evKind = iota
	evPrefillDone
	evDecodeDone // a decode event (simple engine: a block of tokens out, block holds the epoch)
	evWake
	evHop     // a hop of a move ends (req: the move's index, block: its block; see move.go)
	evKick    // a link's or a device's wait ends: start what can move
	evGPUFree // simple engine: a queued prefill's loads allow it to start
	evStep    // the batched engine's step ends
	evNet     // a move's cross-node hop ends (req: the move's index; see fabric.go)
	evInject  // a request handed over by another instance arrives (Inject)
)

type event struct {
	t     int64
	seq   uint64
	kind  evKind
	req   int32
	block int32
}

func (a *event) before(b *event) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// evHeap is a binary min-heap on (t, seq), written out to avoid the
// interface boxing of container/heap.
type evHeap struct {
	ev  []event
	seq uint64
}

func (h *evHeap) push(t int64, kind evKind, req int32) {
	h.add(event{t: t, kind: kind, req: req})
}

func (h *evHeap) add(e event) {
	h.seq++
	e.seq = h.seq
	h.ev = append(h.ev, e)
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.ev[i].before(&h.ev[p]) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *evHeap) pop() event {
	top := h.ev[0]
	n := len(h.ev) - 1
	h.ev[0] = h.ev[n]
	h.ev = h.ev[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.ev[r].before(&h.ev[l]) {
			m = r
		}
		if !h.ev[m].before(&h.ev[i]) {
			break
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
	return top
}

func (h *evHeap) len() int { return len(h.ev) }
