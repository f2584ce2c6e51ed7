package events

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
)

// WhatIfOptions configure WhatIf.
type WhatIfOptions struct {
	// Capacities are the candidate tier's sizes, in blocks (per instance,
	// or in all with Pooled); empty: a spread up to the blocks that left.
	Capacities []int64
	// Pooled makes the candidate tier one pool shared by every instance.
	Pooled bool
	// BlockBytes turns blocks written into bytes (0: bytes not reported).
	BlockBytes int64
	// BlockTokens stands for block_size when an event has none.
	BlockTokens int64
	// onStore, when set, hears every GPU store in order: the frame record
	// it came in (counted from 0), its batch's ts and instance, whether a
	// lower medium of the instance held the block, and which candidates
	// (bit i: Capacities[i]) would have served it; tokens is its size.
	onStore func(frame int, ts float64, inst uint32, served bool, hits uint64, tokens int64)
}

// Observed is what the stream itself shows about one instance.
type Observed struct {
	Instance uint32 `json:"instance"`
	// GPUStores are blocks stored into GPU memory: each a lookup that
	// missed the GPU (hits there publish nothing).
	GPUStores int64 `json:"gpu_stores"`
	// Served counts GPU stores of a block a lower medium of the instance
	// held: loads (a lower tier's hits), by medium.
	Served map[string]int64 `json:"served_from"`
	// Recomputed are GPU stores of a block held nowhere on the instance;
	// Restores of them had been held before and removed.
	Recomputed int64 `json:"recomputed"`
	Restores   int64 `json:"restores_after_removal"`
	// Left counts blocks removed from the instance's last medium.
	Left int64 `json:"blocks_left"`
}

// Candidate is one candidate tier's replay.
type Candidate struct {
	Capacity      int64   `json:"capacity_blocks"`
	Lookups       int64   `json:"lookups"` // recomputed blocks it was asked for
	Hits          int64   `json:"hits"`
	HitRatio      float64 `json:"hit_ratio"`
	TokensSaved   int64   `json:"prefill_tokens_saved"`
	BlocksWritten int64   `json:"blocks_written"`
	BytesWritten  int64   `json:"bytes_written,omitempty"`
}

// WhatIfResult is WhatIf's answer.
type WhatIfResult struct {
	Pooled     bool        `json:"pooled"`
	Instances  []Observed  `json:"instances"`
	Candidates []Candidate `json:"candidates"`
}

type wiKey struct {
	inst uint32
	h    uint64
}

// lru is a candidate tier: blocks that left an instance, least recently
// used first out.
type lru struct {
	cap   int64
	order *list.List
	at    map[wiKey]*list.Element
	c     Candidate
}

func (l *lru) insert(k wiKey, bytes int64) {
	if e, ok := l.at[k]; ok {
		l.order.MoveToFront(e)
		return
	}
	if l.cap <= 0 {
		return
	}
	if int64(l.order.Len()) >= l.cap {
		old := l.order.Back()
		l.order.Remove(old)
		delete(l.at, old.Value.(wiKey))
	}
	l.at[k] = l.order.PushFront(k)
	l.c.BlocksWritten++
	l.c.BytesWritten += bytes
}

func (l *lru) lookup(k wiKey, tokens int64) bool {
	l.c.Lookups++
	if e, ok := l.at[k]; ok {
		l.c.Hits++
		l.c.TokensSaved += tokens
		l.order.MoveToFront(e)
		return true
	}
	return false
}

// WhatIfFile reads the log at path.
func WhatIfFile(path string, opt WhatIfOptions) (*WhatIfResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if len(opt.Capacities) == 0 {
		// A first pass counts the blocks that leave, to spread the sizes.
		res, err := whatIf(f, path, WhatIfOptions{Capacities: []int64{0}, Pooled: opt.Pooled, BlockTokens: opt.BlockTokens})
		if err != nil {
			return nil, err
		}
		var left int64
		for _, o := range res.Instances {
			left += o.Left
		}
		if !opt.Pooled && len(res.Instances) > 0 {
			left = (left + int64(len(res.Instances)) - 1) / int64(len(res.Instances))
		}
		for _, d := range []int64{64, 16, 4, 2, 1} {
			if c := left / d; c > 0 && !slices.Contains(opt.Capacities, c) {
				opt.Capacities = append(opt.Capacities, c)
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return whatIf(f, path, opt)
}

func whatIf(r io.Reader, name string, opt WhatIfOptions) (*WhatIfResult, error) {
	rd, err := NewReader(r, name)
	if err != nil {
		return nil, err
	}
	type inst struct {
		obs     Observed
		where   map[uint64]uint64 // hash -> media bits
		removed map[uint64]bool
		tiers   []*lru // per instance: one per capacity
	}
	media := map[string]uint{"GPU": 0}
	var names = []string{"GPU"}
	bit := func(m string) uint64 {
		b, ok := media[m]
		if !ok && len(names) < 64 {
			b = uint(len(names))
			media[m] = b
			names = append(names, m)
		}
		return 1 << b
	}
	newTiers := func() []*lru {
		ts := make([]*lru, len(opt.Capacities))
		for i, c := range opt.Capacities {
			ts[i] = &lru{cap: c, order: list.New(), at: map[wiKey]*list.Element{}, c: Candidate{Capacity: c}}
		}
		return ts
	}
	var pool []*lru
	if opt.Pooled {
		pool = newTiers()
	}
	insts := map[uint32]*inst{}
	get := func(i uint32) *inst {
		s := insts[i]
		if s == nil {
			s = &inst{obs: Observed{Instance: i, Served: map[string]int64{}}, where: map[uint64]uint64{}, removed: map[uint64]bool{}}
			if !opt.Pooled {
				s.tiers = newTiers()
			}
			insts[i] = s
		}
		return s
	}
	leave := func(s *inst, h uint64) {
		s.obs.Left++
		s.removed[h] = true
		k := wiKey{s.obs.Instance, h}
		ts := s.tiers
		if opt.Pooled {
			k.inst, ts = 0, pool
		}
		for _, t := range ts {
			t.insert(k, opt.BlockBytes)
		}
	}
	frame := -1
	apply := func(s *inst, b *Batch) {
		for i := range b.Events {
			ev := &b.Events[i]
			switch ev.Kind {
			case Stored:
				m := bit(ev.MediumOrGPU())
				tokens := ev.BlockSize
				if tokens <= 0 {
					tokens = opt.BlockTokens
				}
				for _, h := range ev.Hashes {
					before := s.where[h]
					s.where[h] = before | m
					if m != 1 || before&1 != 0 {
						continue // an offload, or already in GPU memory
					}
					s.obs.GPUStores++
					if before != 0 {
						lowest := 0
						for before&(1<<lowest) == 0 {
							lowest++
						}
						s.obs.Served[names[lowest]]++
						if opt.onStore != nil {
							opt.onStore(frame, b.TS, s.obs.Instance, true, 0, tokens)
						}
						continue
					}
					s.obs.Recomputed++
					if s.removed[h] {
						s.obs.Restores++
					}
					k := wiKey{s.obs.Instance, h}
					ts := s.tiers
					if opt.Pooled {
						k.inst, ts = 0, pool
					}
					var hits uint64
					for i, t := range ts {
						if t.lookup(k, tokens) && i < 64 {
							hits |= 1 << i
						}
					}
					if opt.onStore != nil {
						opt.onStore(frame, b.TS, s.obs.Instance, false, hits, tokens)
					}
				}
			case Removed:
				m := bit(ev.MediumOrGPU())
				for _, h := range ev.Hashes {
					w, ok := s.where[h]
					if !ok || w&m == 0 {
						continue
					}
					if w &^= m; w == 0 {
						delete(s.where, h)
						leave(s, h)
					} else {
						s.where[h] = w
					}
				}
			case Cleared:
				hs := make([]uint64, 0, len(s.where))
				for h := range s.where {
					hs = append(hs, h)
				}
				slices.Sort(hs)
				for _, h := range hs {
					delete(s.where, h)
					leave(s, h)
				}
			}
		}
	}
	var rec Record
	for {
		err := rd.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if rec.Type == RecEpoch {
			// A restarted engine's caches start empty: as a clear.
			s := get(rec.Instance)
			b := Batch{Events: []Event{{Kind: Cleared}}}
			apply(s, &b)
			continue
		}
		if rec.Type != RecFrame {
			continue
		}
		b, err := Decode(rec.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: frame seq %d of instance %d: %v", ErrCorrupt, name, rec.Seq, rec.Instance, err)
		}
		frame++
		s := get(rec.Instance)
		apply(s, b)
	}
	res := &WhatIfResult{Pooled: opt.Pooled}
	ids := make([]uint32, 0, len(insts))
	for i := range insts {
		ids = append(ids, i)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	sum := make([]Candidate, len(opt.Capacities))
	for i, c := range opt.Capacities {
		sum[i].Capacity = c
	}
	add := func(ts []*lru) {
		for i, t := range ts {
			sum[i].Lookups += t.c.Lookups
			sum[i].Hits += t.c.Hits
			sum[i].TokensSaved += t.c.TokensSaved
			sum[i].BlocksWritten += t.c.BlocksWritten
			sum[i].BytesWritten += t.c.BytesWritten
		}
	}
	for _, i := range ids {
		res.Instances = append(res.Instances, insts[i].obs)
		add(insts[i].tiers)
	}
	add(pool)
	for i := range sum {
		if sum[i].Lookups > 0 {
			sum[i].HitRatio = float64(sum[i].Hits) / float64(sum[i].Lookups)
		}
	}
	res.Candidates = sum
	return res, nil
}
