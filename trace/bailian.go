package trace

// Alibaba's Qwen Bailian traces (ATC '25, "KVCache Cache in the Wild") are
// JSONL like Mooncake's, with a timestamp in seconds, a chat_id and its
// parent_chat_id (-1: none), and one hash id per 16-token block, each a
// salted hash of that block's tokens alone. kvsim's ids name a block
// together with everything before it, so the reader chains them:
//
//	id[0] = mix(0 XOR mix(h[0])),  id[i] = mix(id[i-1] XOR mix(h[i]))
//
// with mix the splitmix64 finaliser, so the same block at two positions (or
// after two different prefixes) gets two ids. A model block of
// block_tokens = 16k tokens is k such blocks, named by the chained id of
// its last; a trailing partial group is its own, shorter, block, as a
// Mooncake trace's last block is.

// bailianBlock is the tokens per hash id in a Bailian trace.
const bailianBlock = 16

// chainMix is the splitmix64 finaliser.
func chainMix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// chainIDs chains salted per-block hashes in place.
func chainIDs(ids []int64) {
	var prev uint64
	for i, h := range ids {
		prev = chainMix(prev ^ chainMix(uint64(h)))
		ids[i] = int64(prev)
	}
}

// regroup appends to dst the id of every group of g chained ids: the
// chained id of the group's last.
func regroup(dst, chained []int64, g int) []int64 {
	if g <= 1 {
		return append(dst, chained...)
	}
	for end := g; ; end += g {
		if end >= len(chained) {
			if end-g < len(chained) {
				dst = append(dst, chained[len(chained)-1])
			}
			return dst
		}
		dst = append(dst, chained[end-1])
	}
}

// bailian finishes a parsed Bailian line: chains its ids (regrouped to the
// model's blocks unless building the cache) and names its chat and parent.
func (r *Reader) bailian() []int64 {
	chainIDs(r.p.ids)
	e := &r.p.ext
	r.cur.store = r.internChat(e.chat)
	if e.parent >= 0 {
		r.cur.lookup = r.internChat(e.parent)
	}
	if r.build {
		return r.p.ids
	}
	r.chain = regroup(r.chain[:0], r.p.ids, r.opt.BlockTokens/bailianBlock)
	return r.chain
}

// internChat gives a Bailian chat_id its 1-based index into sess.
func (r *Reader) internChat(id int64) int32 {
	if i, ok := r.chatIDs[id]; ok {
		return i
	}
	if r.chatIDs == nil {
		r.chatIDs = map[int64]int32{}
	}
	i := int32(len(r.chatIDs) + 1)
	r.chatIDs[id] = i
	return i
}
