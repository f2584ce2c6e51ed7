package trace

// fmtAzure is Azure's LLM inference trace (csv.go).
const fmtAzure = 2

func init() {
	registerFormat(csvFormat("azure", fmtAzure, "azure_tiny.csv",
		[3]string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, parseDateTime,
		FormatRow{File: "CSV with header `TIMESTAMP,ContextTokens,GeneratedTokens`", Times: "UTC date and time", IDs: "none", Sessions: "none"}))
}
