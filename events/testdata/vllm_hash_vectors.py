# Writes vllm_hash_vectors.json: vLLM's chained block hashes with
# sha256_cbor, computed the way vLLM computes them (cbor2 canonical,
# hashlib), from its documented algorithm: NONE_HASH = sha256_cbor(seed);
# block = sha256_cbor((parent, tuple(tokens), None)); the published int is
# int.from_bytes(digest, "big") & (2**64 - 1). Run with Debian's python3
# and python3-cbor2:  /usr/bin/python3 vllm_hash_vectors.py > vllm_hash_vectors.json
import hashlib
import json

import cbor2


def sha256_cbor(x):
    return hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()


CASES = [
    ("0", 16, list(range(32))),
    ("", 4, [0, 1, 23, 24, 255, 256, 65535, 65536, 4294967295, 4294967296, 151643, 128000]),
    ("42", 16, [128000] + [9906 + i for i in range(47)]),  # a partial last block is not hashed
]

out = []
for seed, bs, tokens in CASES:
    parent = sha256_cbor(seed)
    none = parent.hex()
    blocks = []
    for i in range(0, len(tokens) - bs + 1, bs):
        parent = sha256_cbor((parent, tuple(tokens[i:i + bs]), None))
        blocks.append({"hex": parent.hex(), "int": int.from_bytes(parent, "big") & (2**64 - 1)})
    out.append({"seed": seed, "block_size": bs, "tokens": tokens, "none_hash": none, "blocks": blocks})
print(json.dumps(out, indent=1))
