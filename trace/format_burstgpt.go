package trace

// fmtBurstGPT is BurstGPT's trace (csv.go).
const fmtBurstGPT = 3

func init() {
	registerFormat(csvFormat("burstgpt", fmtBurstGPT, "burstgpt_tiny.csv",
		[3]string{"Timestamp", "Request tokens", "Response tokens"}, csvSeconds,
		FormatRow{File: "CSV with header `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`",
			Times: "seconds from the trace's start", IDs: "none", Sessions: "none"}))
}
