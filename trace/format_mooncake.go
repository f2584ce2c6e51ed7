package trace

// fmtMooncake is Mooncake's JSONL (parse.go), the default format.
const fmtMooncake = 0

func init() {
	registerFormat(FormatSpec{Name: "mooncake", ID: fmtMooncake, Doc: "JSONL; optional session_id and delay",
		Fixture: "mooncake_sessions.jsonl", line: (*Reader).mooncakeLine})
}
