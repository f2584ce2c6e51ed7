package trace

// fmtBailian is Qwen Bailian's JSONL (parse.go, bailian.go).
const fmtBailian = 1

func init() {
	registerFormat(FormatSpec{Name: "bailian", ID: fmtBailian,
		Doc:     "Qwen Bailian JSONL: 16-token\nids chained, regrouped into block_tokens, a multiple of 16",
		Fixture: "bailian_tiny.jsonl",
		Row: FormatRow{File: "JSONL: `chat_id`, `parent_chat_id`, `timestamp`, `input_length`, `output_length`, `type`, `turn`, `hash_ids`",
			Times: "seconds, integer or decimal", IDs: "one per 16 tokens, chained and regrouped by kvsim", Sessions: "`parent_chat_id`"},
		line: func(r *Reader, line []byte, v *values) ([]int64, string, bool, error) {
			if reason := r.p.parse(line, bailianBlock, v); reason != "" {
				return nil, reason, false, nil
			}
			return r.bailian(), "", false, nil
		},
		HashBlock: bailianBlock})
}
