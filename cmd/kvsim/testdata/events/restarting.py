# An engine that restarts, for the recorder's reconnect test (written from
# vLLM's published schema, not its code). It binds an XPUB socket at the
# port given (a PUB that sees subscriptions, so nothing is sent before the
# recorder listens), sends batches 0..4 (map encoding, one GPU block
# each), closes the socket as a dying engine would, stays away for a
# second, binds the same port again and, once the recorder has redialled
# and subscribed, sends batches 0..2 of its new life (new blocks): its
# sequence numbers start again at 0. It prints "UP 1", "DOWN", "UP 2",
# "DONE" as it goes and stays up until stdin closes.
import sys
import time

import msgpack
import zmq

TOPIC = b"kv-events"


def batch(life, seq):
    h = life * 100 + seq
    ev = {"type": "BlockStored", "block_hashes": [h], "parent_block_hash": None,
          "token_ids": [], "block_size": 16, "lora_id": None, "medium": "GPU"}
    return msgpack.packb([1700000000.0 + 10 * life + seq, [ev], 0], use_bin_type=True)


def life(ctx, port, n, k):
    pub = ctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind("tcp://127.0.0.1:%d" % port)
    print("UP", k, flush=True)
    sub = pub.recv()
    assert sub[:1] == b"\x01", sub
    for seq in range(n):
        pub.send_multipart([TOPIC, seq.to_bytes(8, "big"), batch(k, seq)])
    return pub


def main():
    port = int(sys.argv[1])
    ctx = zmq.Context()
    pub = life(ctx, port, 5, 1)
    time.sleep(0.3)  # let the frames leave before the socket goes
    pub.close(0)
    print("DOWN", flush=True)
    time.sleep(1.0)
    pub = life(ctx, port, 3, 2)
    print("DONE", flush=True)
    sys.stdin.readline()
    pub.close(0)
    ctx.term()


main()
