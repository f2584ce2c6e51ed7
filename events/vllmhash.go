package events

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// vLLM's chained block hash with its portable hash function sha256_cbor
// (vllm/v1/core/kv_cache_utils.py: init_none_hash, hash_block_tokens,
// maybe_convert_block_hash; vllm/utils/hashing.py: sha256_cbor):
//
//	NONE_HASH = sha256(cbor(seed))                  seed: PYTHONHASHSEED, a text string
//	h(block)  = sha256(cbor([parent, tokens, nil])) parent: the previous block's h, or NONE_HASH
//
// over full blocks only, where cbor is canonical CBOR (RFC 8949: shortest
// heads, definite lengths): parent a byte string, tokens an array of
// integers, nil the absent extra keys (no LoRA, multimodal input or
// cache salt). Engines publish the 32 bytes, or, with
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES, their low 64 bits (the last 8
// bytes read big-endian), which is what VLLMHash64 returns.

// cborHead appends a CBOR head: major type and argument, shortest form.
func cborHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

// cborInt appends an integer (major 0, or 1 for negatives: -1-n).
func cborInt(b []byte, v int64) []byte {
	if v >= 0 {
		return cborHead(b, 0, uint64(v))
	}
	return cborHead(b, 1, uint64(-1-v))
}

// VLLMNoneHash is NONE_HASH for seed (the engines' PYTHONHASHSEED).
func VLLMNoneHash(seed string) [32]byte {
	b := cborHead(nil, 3, uint64(len(seed)))
	return sha256.Sum256(append(b, seed...))
}

// VLLMBlockHash is hash_block_tokens(sha256_cbor, parent, tokens, None).
func VLLMBlockHash(parent [32]byte, tokens []int64) [32]byte {
	b := make([]byte, 0, 40+9*len(tokens))
	b = cborHead(b, 4, 3)
	b = cborHead(b, 2, 32)
	b = append(b, parent[:]...)
	b = cborHead(b, 4, uint64(len(tokens)))
	for _, t := range tokens {
		b = cborInt(b, t)
	}
	b = append(b, 0xf6) // null: no extra keys
	return sha256.Sum256(b)
}

// VLLMHash64 is the 64-bit form engines publish as an integer.
func VLLMHash64(h [32]byte) uint64 { return binary.BigEndian.Uint64(h[24:]) }

// VLLMBlockHashes chains the full blocks of tokens from NONE_HASH(seed).
func VLLMBlockHashes(seed string, tokens []int64, blockSize int) ([][32]byte, error) {
	if blockSize < 1 {
		return nil, fmt.Errorf("block size %d", blockSize)
	}
	parent := VLLMNoneHash(seed)
	var out [][32]byte
	for i := 0; i+blockSize <= len(tokens); i += blockSize {
		parent = VLLMBlockHash(parent, tokens[i:i+blockSize])
		out = append(out, parent)
	}
	return out, nil
}
