# A KV-event publisher written from vLLM's published schema (not its
# code), for kvsim's interoperability tests: an XPUB socket (a PUB that
# also sees subscriptions, so nothing is sent before the recorder listens)
# and a ROUTER replay socket. It prints "PORTS <pub> <replay>", waits for a
# subscriber, then sends batches 0..N-1 as [topic, seq big-endian, payload]:
# the first half with events as tagged maps, the rest as tagged arrays.
# Sequence numbers 5 and 6 are never sent live but stay in the replay
# buffer (a gap the recorder refills); 12 is neither sent nor buffered (a
# gap it must report as lost). One 4-part frame is not an event batch.
# It serves replay requests until stdin closes.
import sys

import msgpack
import zmq

N = 20
TOPIC = b"kv-events"


def stored(i, enc):
    ev = {
        "block_hashes": [(1 << 63) + i, i],
        "parent_block_hash": None if i == 0 else i - 1,
        "token_ids": list(range(i, i + 4)),
        "block_size": 2,
        "lora_id": None,
        "medium": "GPU" if i % 2 == 0 else "CPU",
        "lora_name": None,
        "group_idx": 0,
    }
    return tagged("BlockStored", ev, enc, ["block_hashes", "parent_block_hash", "token_ids", "block_size",
                                           "lora_id", "medium", "lora_name", "extra_keys", "group_idx"])


def removed(h, medium, enc):
    return tagged("BlockRemoved", {"block_hashes": [h], "medium": medium}, enc, ["block_hashes", "medium"])


def tagged(tag, fields, enc, order):
    if enc == "map":
        return dict({"type": tag}, **fields)
    return [tag] + [fields.get(k) for k in order]


def batch(seq):
    enc = "map" if seq < N // 2 else "array"
    evs = [stored(seq, enc)]
    if seq % 3 == 2:
        # Remove the previous batch's second block, then (for seq 8) store
        # it again: a re-store after removal.
        evs.append(removed(seq - 1, "GPU" if (seq - 1) % 2 == 0 else "CPU", enc))
    if seq == 9:
        evs.append(stored(7, enc))
    return msgpack.packb([1700000000.0 + seq, evs, 0], use_bin_type=True)


def main():
    ctx = zmq.Context()
    pub = ctx.socket(zmq.XPUB)
    pub_port = pub.bind_to_random_port("tcp://127.0.0.1")
    rep = ctx.socket(zmq.ROUTER)
    rep_port = rep.bind_to_random_port("tcp://127.0.0.1")
    print("PORTS", pub_port, rep_port, flush=True)
    sub = pub.recv()  # b"\x01" + topic prefix
    assert sub[:1] == b"\x01", sub
    buf = []
    for seq in range(N):
        payload = batch(seq)
        if seq != 12:
            buf.append((seq, payload))
        if seq in (5, 6, 12):
            continue
        if seq == 3:
            pub.send_multipart([TOPIC, b"junk", b"x", b"y"])
        pub.send_multipart([TOPIC, seq.to_bytes(8, "big"), payload])
    poller = zmq.Poller()
    poller.register(rep, zmq.POLLIN)
    poller.register(sys.stdin, zmq.POLLIN)
    while True:
        ready = dict(poller.poll())
        if rep in ready:
            ident, empty, start = rep.recv_multipart()
            start = int.from_bytes(start, "big")
            for seq, payload in buf:
                if seq >= start:
                    rep.send_multipart([ident, b"", seq.to_bytes(8, "big"), payload])
            rep.send_multipart([ident, b"", (-1).to_bytes(8, "big", signed=True), b""])
        if sys.stdin.fileno() in ready or sys.stdin in ready:
            if not sys.stdin.readline():
                break
    pub.close(0)
    rep.close(0)
    ctx.term()


main()
