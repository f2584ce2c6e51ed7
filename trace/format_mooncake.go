package trace

// fmtMooncake is Mooncake's JSONL (parse.go), the default format.
const fmtMooncake = 0

func init() {
	registerFormat(FormatSpec{Name: "mooncake", ID: fmtMooncake, Doc: "JSONL; optional session_id and delay",
		Fixture: "mooncake_sessions.jsonl", line: (*Reader).mooncakeLine,
		Row: FormatRow{File: "JSONL: `timestamp`, `input_length`, `output_length`, `hash_ids`", Times: "ms, integer or decimal",
			IDs: "chained-prefix ids, one per `block_tokens` tokens", Sessions: "optional `session_id`, `delay`; agentic `call_id`, `parent_call_id`"}})
}
