package sim

import (
	"math"

	"kvsim/core"
)

// The simple engine (GPUSpec.Engine's zero value): one prefill at a time at
// the token rate, loads overlapped layer by layer (or serial), and each
// running request decoding at its own fixed rate beside the prefills.
//
// The GPU is never held by a prefill whose KV has not started arriving:
// issued prefills wait in a FIFO, and when the GPU is free the first one
// whose loads allow it to start runs, so a request ready now goes before
// an earlier one still loading. Serial loading allows a start once every
// load landed; layer-wise, once the first layer's share of the bytes landed
// (landed bytes x layers >= the load's bytes). A layer-wise prefill started
// before its last load landed ends at the later of its start + compute and
// that landing + one layer's compute, known when the landing is.
//
// Decoding allocates KV a block at a time: one event per block of
// generated tokens, at which the core grows the request's HBM (Core.Grow)
// and may preempt. A preempted request's pending event is stale (its epoch
// moved on); it keeps the tokens it generated and recomputes them in its
// next prefill.

// Phases of a request's prefill in the simple engine.
const (
	phaseIdle    uint8 = iota // no prefill issued, or it has been scheduled to end
	phaseQueued               // issued, waiting in s.pq for the GPU
	phaseRunning              // on the GPU, its end waiting for its last load to land
)

// unknown is a time not known yet (a load still on the links).
const unknown = core.MaxTime + 1

// simplePrefill queues an issued prefill for the GPU.
func (s *Sim) simplePrefill(now int64, req core.ReqID, cached, compute int) {
	rt := s.timing(req)
	rt.issued, rt.cached, rt.compute = now, cached, compute+rt.resume
	rt.timing = core.Timing{ResumeTokens: rt.resume}
	rt.ready, rt.landed = now, now
	rt.hadLoads = rt.loads
	if rt.loads {
		rt.landed, rt.ready = unknown, unknown
		if rt.pending == 0 { // landed while the request waited for other requests' blocks
			s.loadsDone(now, rt)
		} else if s.firstLayerLanded(rt) {
			rt.ready = now
		}
	}
	rt.loads = false // the next admission's loads start afresh
	rt.phase = phaseQueued
	s.toFill += int64(rt.compute)
	s.pq = append(s.pq, req)
	s.kickSimple(now)
}

// firstLayerLanded says whether a layer-wise prefill may start: the first
// layer's share of its loads' bytes is in HBM.
func (s *Sim) firstLayerLanded(rt *reqTiming) bool {
	return !s.cfg.GPU.Serial && rt.landedBytes*int64(s.cfg.GPU.Layers) >= rt.loadBytes
}

// loadsDone records that a queued or running prefill's loads have all
// landed, the last at rt.loadDone.
func (s *Sim) loadsDone(now int64, rt *reqTiming) {
	rt.landed = rt.loadDone
	rt.ready = min(rt.ready, now)
	rt.timing.LoadNs = rt.loadDone - rt.loadStart
	rt.timing.LoadWaitNs = max(rt.loadDone-rt.issued, 0)
}

// simpleLoadLanded is the simple engine's side of loadLanded: a layer-wise
// prefill may start once the first layer's share has landed.
func (s *Sim) simpleLoadLanded(req core.ReqID) {
	if rt := &s.req[req]; rt.phase == phaseQueued && rt.ready == unknown && s.firstLayerLanded(rt) {
		rt.ready = s.now
		s.kickSimple(s.now)
	}
}

// simpleLoadsLanded is the simple engine's side of loadsLanded: a queued
// prefill may start; a running one now knows its end.
func (s *Sim) simpleLoadsLanded(now int64, req core.ReqID) {
	rt := &s.req[req]
	switch rt.phase {
	case phaseQueued:
		s.loadsDone(now, rt)
		s.kickSimple(now)
	case phaseRunning:
		s.loadsDone(now, rt)
		s.endPrefill(now, req, rt)
	}
}

// kickSimple starts the next prefill if the GPU is free: the first in
// issue order whose loads allow it now, else a wake when the first can
// (only a prefill waiting for its loads to land has no time yet: the
// landing kicks). It is called when a prefill is issued, when loads land,
// and after every event (a prefill's end, a wake).
func (s *Sim) kickSimple(now int64) {
	if s.gpu > now || s.err != nil {
		return
	}
	next := unknown
	for i, id := range s.pq {
		rt := &s.req[id]
		if rt.ready > now {
			next = min(next, rt.ready)
			continue
		}
		s.pq = append(s.pq[:i], s.pq[i+1:]...)
		s.startPrefill(now, id, rt)
		return
	}
	if next <= core.MaxTime && (s.gpuWake <= now || next < s.gpuWake) {
		s.gpuWake = next
		s.heap.push(next, evGPUFree, -1)
	}
}

// startPrefill runs request req's prefill on the GPU from now. Its end is
// scheduled at once, or, layer-wise with loads still on the links, when the
// last of them lands (the GPU is held meanwhile).
func (s *Sim) startPrefill(now int64, req core.ReqID, rt *reqTiming) {
	rt.start = now
	s.toFill -= int64(rt.compute)
	rt.timing.ComputeNs = s.cfg.GPU.ComputeNs(rt.cached, rt.compute)
	rt.phase = phaseRunning
	if rt.landed == unknown {
		s.gpu = unknown
		return
	}
	s.endPrefill(now, req, rt)
}

// endPrefill schedules the end of req's running prefill, its loads all
// landed (at rt.landed). Layer-wise, layer i computes once its share of
// the KV landed: the prefill ends at the later of start + compute and the
// last load + one layer's compute.
func (s *Sim) endPrefill(now int64, req core.ReqID, rt *reqTiming) {
	g := &s.cfg.GPU
	cn := rt.timing.ComputeNs
	end := rt.start + cn // both at most MaxTime+1: no wrap
	if !g.Serial && rt.hadLoads {
		end = max(end, rt.landed+toNs(float64(cn)/float64(g.Layers)))
	}
	if end > core.MaxTime {
		if rt.issued == now && !rt.hadLoads {
			s.fail(req, "timestamp", "the trace reaches the end of simulated time: a prefill starting at %s ends past the limit of %s",
				span(float64(now)), limit)
		} else {
			s.fail(req, "gpu.prefill_tokens_per_s", "prefills and loads queued for the GPU end past the simulated-time limit of %s: the prefill rate (%g tokens/s) or the links are too slow for this trace",
				limit, g.PrefillTokensPerSec)
		}
		return
	}
	rt.phase = phaseIdle
	s.gpu = end
	s.heap.push(end, evPrefillDone, req)
}

// simpleDecode starts (or resumes) request req's decoding: its first
// event, now, grows its KV for the next token.
func (s *Sim) simpleDecode(now int64, req core.ReqID, tokens int) {
	rt := s.timing(req)
	rt.out, rt.resume = tokens, 0
	rt.run0, rt.base0, rt.segEnd, rt.stalled = now, rt.gen, rt.gen, false
	s.heap.add(event{t: now, kind: evDecodeDone, req: req, block: rt.epoch})
}

// decodeStep is a decode event: the tokens up to segEnd are out. It ends
// the request, or grows its KV by a block and schedules the block's end.
// Token k of a run ends at run0 + decodeNs(k - base0), so a run's
// duration rounds once, whatever its number of blocks.
func (s *Sim) decodeStep(now int64, req core.ReqID, epoch int32) {
	rt := &s.req[req]
	if epoch != rt.epoch {
		return // preempted since: a stale event
	}
	rt.gen = rt.segEnd
	if rt.gen >= rt.out {
		rt.gen = 0 // the slot may be reused at once
		s.core.DecodeDone(now, req)
		return
	}
	if !s.core.Grow(now, req, rt.gen+1) {
		if s.core.GrowWaiting(req) { // HBM still draining: retried when a drain lands
			s.stalled = append(s.stalled, stalledDecode{req, epoch})
		}
		return // else preempted itself (Preempted saw it)
	}
	rt = &s.req[req] // Grow may have admitted requests, growing s.req
	if rt.stalled {  // its tokens resume from now
		rt.stalled = false
		rt.run0, rt.base0 = now, rt.gen
	}
	bt := s.core.PageTokens()
	rt.segEnd = rt.gen + min(bt-rt.gen%bt, rt.out-rt.gen)
	end := rt.run0 + s.cfg.GPU.decodeNs(rt.segEnd-rt.base0) // each at most MaxTime: no wrap
	if end > core.MaxTime {
		s.fail(req, "timestamp", "the trace reaches the end of simulated time: decoding %d tokens from %s ends past the limit of %s",
			rt.out, span(float64(rt.run0)), limit)
		return
	}
	s.heap.add(event{t: end, kind: evDecodeDone, req: req, block: rt.epoch})
}

// stalledDecode is a simple-engine decode whose Grow waits for draining
// HBM, at the epoch it stalled in (a preemption since makes it stale).
type stalledDecode struct {
	req   core.ReqID
	epoch int32
}

// retryStalled asks again for the decodes waiting for draining HBM, in the
// order they stalled; those still short of room stall again.
func (s *Sim) retryStalled(now int64) {
	n := len(s.stalled)
	for i := 0; i < n; i++ {
		d := s.stalled[i]
		if rt := &s.req[d.req]; d.epoch == rt.epoch {
			rt.stalled = true
			s.decodeStep(now, d.req, d.epoch)
		}
	}
	s.stalled = s.stalled[:copy(s.stalled, s.stalled[n:])]
}

// simplePreempted forgets req's pending decode event and keeps the tokens
// it generated by now, which its next prefill recomputes.
func (s *Sim) simplePreempted(now int64, req core.ReqID) {
	rt := s.timing(req)
	rt.epoch++
	g := &s.cfg.GPU
	lo, hi := rt.gen, rt.segEnd
	k := rt.base0 + int(min(float64(now-rt.run0)*g.DecodeTokensPerSec/1e9, math.MaxInt32))
	k = min(max(k, lo), hi)
	for k < hi && rt.run0+g.decodeNs(k+1-rt.base0) <= now {
		k++
	}
	for k > lo && rt.run0+g.decodeNs(k-rt.base0) > now {
		k--
	}
	rt.gen, rt.segEnd, rt.resume = k, k, k
}
