# An indexer that hashes prompts as vLLM does, written from vLLM's
# documented algorithm (not its code): NONE_HASH = sha256_cbor(seed), each
# full block sha256_cbor((parent, tuple(tokens), None)), published as the
# low 64 bits. Arguments: a Mooncake JSONL trace with token_ids, the block
# size, the seed, and a JSON file of published BlockStored events
# [{"hashes": [...], "parent": n or null, "tokens": [...]}]. It prints
# {"blocks": n checked, "bad": [reasons]}: every published hash must be one
# it computed from the prompts, its tokens those of the block, and its
# parent the block before it in the prompt.
import hashlib
import json
import sys

import cbor2

trace, bs, seed, published = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def sha256_cbor(x):
    return hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()


def low64(d):
    return int.from_bytes(d, "big") & (2**64 - 1)


known = {}  # hash -> (tokens, parent hash or None)
none = sha256_cbor(seed)
with open(trace) as f:
    for line in f:
        toks = json.loads(line).get("token_ids", [])
        parent, ph = None, none
        for i in range(0, len(toks) - bs + 1, bs):
            ph = sha256_cbor((ph, tuple(toks[i:i + bs]), None))
            known[low64(ph)] = (toks[i:i + bs], parent)
            parent = low64(ph)

bad = []
n = 0
with open(published) as f:
    evs = json.load(f)
for ev in evs:
    hs, toks = ev["hashes"], ev["tokens"]
    if len(toks) != len(hs) * bs:
        bad.append("%d tokens for %d blocks" % (len(toks), len(hs)))
        continue
    for j, h in enumerate(hs):
        n += 1
        if h not in known:
            bad.append("hash %d not computed from any prompt" % h)
            continue
        want_toks, want_parent = known[h]
        if toks[j * bs:(j + 1) * bs] != want_toks:
            bad.append("hash %d: tokens differ" % h)
        parent = ev["parent"] if j == 0 else hs[j - 1]
        if parent != want_parent:
            bad.append("hash %d: parent %s, want %s" % (h, parent, want_parent))
print(json.dumps({"blocks": n, "bad": bad[:20]}))
