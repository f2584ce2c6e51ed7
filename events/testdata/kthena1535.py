# Writes kthena1535.msgpack: the vLLM 0.26.0 event batch quoted in
# volcano-sh/kthena issue #1535 (Qwen3-8B, topic "kv-events"), packed as
# vLLM packs it: an array batch [ts, events, data_parallel_rank] whose
# events are maps tagged by "type", defaulted fields left out.
import msgpack

batch = [
    1789095808.8378847,
    [
        {
            "type": "BlockStored",
            "block_hashes": [15760518052499183552],
            "parent_block_hash": None,
            "token_ids": [151644, 872, 198, 9064, 374, 279, 6722, 315,
                          5616, 30, 151645, 198, 151644, 77091, 198, 151667],
            "block_size": 16,
            "lora_id": None,
            "medium": "GPU",
            "lora_name": None,
            "extra_keys": [None],
            "group_idx": 0,
            "kv_cache_spec_kind": "full_attention",
        }
    ],
    0,
]
with open("kthena1535.msgpack", "wb") as f:
    f.write(msgpack.packb(batch, use_bin_type=True))
