# A KV-event subscriber written from vLLM's published schema (not its
# code), for kvsim's interoperability tests. Arguments: PUB endpoints,
# then "--replay", then the replay endpoints, one per instance. It prints
# READY once its sockets exist, then records live frames until a line
# "END n0 n1 ..." (each instance's batch count) arrives on stdin; it asks
# each replay socket for what it missed, checks every frame against the
# schema and the sequence numbers for contiguity, applies BlockStored and
# BlockRemoved, and prints the residency as JSON:
# {"live": n, "replayed": n, "resident": {"<instance>": {"<medium>": [hashes]}}}.
import json
import sys

import msgpack
import zmq

args = sys.argv[1:]
cut = args.index("--replay")
pubs, replays = args[:cut], args[cut + 1:]
ctx = zmq.Context()
subs = []
for ep in pubs:
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.connect(ep)
    subs.append(s)
frames = [dict() for _ in pubs]  # seq -> payload
live = 0
print("READY", flush=True)

poller = zmq.Poller()
for s in subs:
    poller.register(s, zmq.POLLIN)
poller.register(sys.stdin, zmq.POLLIN)
end = None
while end is None:
    for sock, _ in poller.poll():
        if sock in subs:
            i = subs.index(sock)
            topic, seq, payload = sock.recv_multipart()
            assert len(seq) == 8, seq
            frames[i].setdefault(int.from_bytes(seq, "big"), payload)
            live += 1
        else:
            line = sys.stdin.readline().split()
            assert line and line[0] == "END", line
            end = [int(x) for x in line[1:]]

replayed = 0
for i, ep in enumerate(replays):
    missing = [q for q in range(end[i]) if q not in frames[i]]
    if not missing:
        continue
    d = ctx.socket(zmq.DEALER)
    d.connect(ep)
    d.send_multipart([b"", missing[0].to_bytes(8, "big")])
    while True:
        empty, seq, payload = d.recv_multipart()
        seq = int.from_bytes(seq, "big", signed=True)
        if seq == -1:
            break
        if seq not in frames[i]:
            frames[i][seq] = payload
            replayed += 1
    d.close(0)

STORED = ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
          "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"]
REMOVED = ["block_hashes", "medium", "group_idx"]


def fields(ev):
    if isinstance(ev, dict):
        tag = ev["type"]
        return tag, ev
    tag = ev[0]
    names = STORED if tag == "BlockStored" else REMOVED
    assert len(ev) - 1 <= len(names), ev
    return tag, dict(zip(names, ev[1:]))


resident = {}
for i in range(len(pubs)):
    assert sorted(frames[i]) == list(range(end[i])), (i, end[i], len(frames[i]))
    sets = {}
    for seq in range(end[i]):
        batch = msgpack.unpackb(frames[i][seq], raw=False)
        assert isinstance(batch, list) and len(batch) == 3, batch
        ts, evs, rank = batch
        assert isinstance(ts, float) and rank == i, batch
        for ev in evs:
            tag, f = fields(ev)
            assert isinstance(f["block_hashes"], list) and f["block_hashes"], ev
            assert all(isinstance(h, int) and 0 <= h < 1 << 64 for h in f["block_hashes"]), ev
            medium = f["medium"]
            assert medium in ("GPU", "CPU", "STORAGE"), ev
            s = sets.setdefault(medium, set())
            if tag == "BlockStored":
                assert f["parent_block_hash"] is None and f["token_ids"] == [] and f["block_size"] > 0, ev
                assert "lora_id" in f and "lora_name" in f, ev
                s.update(f["block_hashes"])
            elif tag == "BlockRemoved":
                for h in f["block_hashes"]:
                    assert h in s, ("removed a block never stored", ev)
                    s.discard(h)
            else:
                raise AssertionError(ev)
    resident[str(i)] = {m: sorted(s) for m, s in sets.items()}
print(json.dumps({"live": live, "replayed": replayed, "resident": resident}), flush=True)
