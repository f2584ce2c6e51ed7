package events

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// What a request is, read from a log (docs/events.md, "As a trace"): the
// GPU BlockStored events of one batch of one instance are one prefill. Its
// events without a parent_block_hash form one request; an event whose
// parent is the last block of a request of the same batch extends it; any
// other event with a parent starts a request whose blocks begin with that
// parent's chain (as far as earlier stores told it), so prompts that share
// a prefix share ids. Blocks are numbered by first sight. Input tokens are
// blocks x block_tokens, which must be the events' block_size; output tokens are
// 1: a prefill yields the first token, and decode is not in the stream. The
// arrival is the batch's ts, in ms after the first frame's, never going
// back (instances' clocks and receive order can disagree).

// maxChain bounds a reconstructed prefix (a cyclic parent chain in a
// corrupt or hostile log ends there).
const maxChain = 1 << 16

// maxTokenBlocks bounds the blocks whose tokens a conversion keeps (a
// 16-token block costs about 150 bytes of map entry and slice).
const maxTokenBlocks = 1 << 22

// ToTrace writes the requests of the event log read from src as Mooncake
// JSONL (timestamp, input_length, output_length, hash_ids, and token_ids
// for the leading blocks whose BlockStored carried them) to dst, each id
// one block of blockTokens tokens; an event whose block_size differs is an
// error (kvsim's blocks would not be the engine's). A
// log's bad bytes are an error naming name and the record's byte offset;
// a tail cut short (a recorder killed mid-write) ends it quietly.
func ToTrace(src io.Reader, name string, blockTokens int, dst io.Writer) error {
	rd, err := NewReader(src, name)
	if err != nil {
		return fmt.Errorf("%s at byte 0", err)
	}
	w := bufio.NewWriter(dst)
	ids := map[uint64]int64{}
	parent := map[uint64]uint64{}
	tokens := map[uint64][]int64{}
	id := func(h uint64) int64 {
		v, ok := ids[h]
		if !ok {
			v = int64(len(ids))
			ids[h] = v
		}
		return v
	}
	type req struct {
		blocks []uint64
		root   bool // its events had no parent
	}
	var (
		rec        Record
		t0, lastMS float64
		started    bool
		line       []byte
	)
	for {
		at := rd.off
		err := rd.Next(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if rec.Type != RecFrame {
			continue
		}
		b, err := Decode(rec.Payload)
		if err != nil {
			return fmt.Errorf("%w: %s: record at byte %d: frame seq %d of instance %d: %v", ErrCorrupt, name, at, rec.Seq, rec.Instance, err)
		}
		var reqs []*req
		for i := range b.Events {
			ev := &b.Events[i]
			if ev.Kind != Stored || ev.MediumOrGPU() != "GPU" || len(ev.Hashes) == 0 {
				continue
			}
			if ev.BlockSize > 0 && ev.BlockSize != int64(blockTokens) {
				return fmt.Errorf("%s: record at byte %d: block_size %d, but block_tokens is %d: set block_tokens to the engine's block size",
					name, at, ev.BlockSize, blockTokens)
			}
			for j, h := range ev.Hashes {
				if j > 0 {
					parent[h] = ev.Hashes[j-1]
				} else if ev.HasParent {
					parent[h] = ev.Parent
				}
			}
			// An engine's token_ids hold every block's tokens, in order.
			if len(ev.TokenIDs) == len(ev.Hashes)*blockTokens {
				for j, h := range ev.Hashes {
					if _, ok := tokens[h]; !ok && len(tokens) < maxTokenBlocks {
						tokens[h] = slices.Clone(ev.TokenIDs[j*blockTokens : (j+1)*blockTokens])
					}
				}
			}
			var r *req
			for _, q := range reqs {
				if (!ev.HasParent && q.root) || (ev.HasParent && q.blocks[len(q.blocks)-1] == ev.Parent) {
					r = q
					break
				}
			}
			if r == nil {
				r = &req{root: !ev.HasParent}
				if ev.HasParent {
					r.blocks = chain(parent, ev.Parent)
				}
				reqs = append(reqs, r)
			}
			r.blocks = append(r.blocks, ev.Hashes...)
		}
		if len(reqs) == 0 {
			continue
		}
		if !started {
			t0, started = b.TS, true
		}
		ms := (b.TS - t0) * 1000
		if math.IsNaN(ms) || ms < lastMS {
			ms = lastMS
		}
		ms = min(ms, 1e12) // 30 years: past it a hostile ts would overflow the reader's nanoseconds
		lastMS = ms
		for _, r := range reqs {
			if len(r.blocks) > maxChain {
				r.blocks = r.blocks[len(r.blocks)-maxChain:]
			}
			in := int64(len(r.blocks)) * int64(blockTokens)
			line = append(line[:0], `{"timestamp":`...)
			line = strconv.AppendFloat(line, ms, 'f', 3, 64)
			line = append(line, `,"input_length":`...)
			line = strconv.AppendInt(line, in, 10)
			line = append(line, `,"output_length":1,"hash_ids":[`...)
			for k, h := range r.blocks {
				if k > 0 {
					line = append(line, ',')
				}
				line = strconv.AppendInt(line, id(h), 10)
			}
			line = append(line, ']')
			// The tokens of the blocks the events told, up to the first
			// they did not (kvsim --events-hash vllm names those blocks).
			for k, h := range r.blocks {
				ts, ok := tokens[h]
				if !ok {
					break
				}
				if k == 0 {
					line = append(line, `,"token_ids":[`...)
				} else {
					line = append(line, ',')
				}
				for i, t := range ts {
					if i > 0 {
						line = append(line, ',')
					}
					line = strconv.AppendInt(line, t, 10)
				}
				if k == len(r.blocks)-1 || tokens[r.blocks[k+1]] == nil {
					line = append(line, ']')
				}
			}
			line = append(line, "}\n"...)
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// chain is h's ancestors as stores told them, oldest first, then h.
func chain(parent map[uint64]uint64, h uint64) []uint64 {
	c := []uint64{h}
	seen := map[uint64]bool{h: true}
	for len(c) < maxChain {
		p, ok := parent[h]
		if !ok || seen[p] {
			break
		}
		seen[p] = true
		c = append(c, p)
		h = p
	}
	for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
		c[i], c[j] = c[j], c[i]
	}
	return c
}
