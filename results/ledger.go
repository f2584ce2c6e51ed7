package results

// Ledger is one policy's endurance and cost ledger (docs/ledger.md has
// every formula). Bytes written into a tier are the bytes its incoming
// links carried, hop by hop, so they add up to the links' bytes into it.
type Ledger struct {
	// SpanS is the trace's simulated span, first arrival (0: arrivals are
	// rebased) to the last completion: the policy's simulated_seconds.
	SpanS float64 `json:"span_s"`
	// Copies is how many of each tier the run had: a [cluster]'s
	// instances (a pooled tier: its nodes' shares), else 1. Rates per
	// drive divide by it; costs multiply by it.
	Copies int          `json:"copies"`
	Tiers  []TierLedger `json:"tiers"`
	Cost   LedgerCost   `json:"cost"`
}

// TierLedger is what one tier was written and what that does to it.
type TierLedger struct {
	Tier         string `json:"tier"`
	BytesWritten int64  `json:"bytes_written"` // all copies, as the host wrote them
	// ByPurpose splits BytesWritten by the move that wrote it: "demote"
	// (offload on evict), "write_through", "load" (promotion, or staging
	// through this tier on the way to hbm) and "prefetch".
	ByPurpose   map[string]int64 `json:"bytes_written_by_purpose"`
	BytesPerDay float64          `json:"bytes_written_per_day"` // BytesWritten x 86400 / SpanS; 0 for a span of 0
	// WriteAmplification is device bytes per host byte that the tier's
	// store adds (the SSD bucket store's 4 KiB alignment and metadata);
	// 1 where it adds none. The drive's own (FTL) amplification is not in it.
	WriteAmplification float64 `json:"write_amplification"`
	// DriveWritesPerDay is one copy's device writes a day over its
	// capacity: BytesPerDay / Copies x WriteAmplification / capacity.
	DriveWritesPerDay float64 `json:"drive_writes_per_day"`
	// RatedBytes is one copy's rated writes: dwpd x capacity x 365 x
	// service_years, or tbw x 1e12, the smaller if both; 0 unrated.
	RatedBytes float64 `json:"rated_bytes_written,omitempty"`
	// LifeYears is RatedBytes / (365 x BytesPerDay / Copies x
	// WriteAmplification): absent without a rating or without writes.
	LifeYears *float64 `json:"life_years,omitempty"`
	// AmortYears is the years the tier's cost is spread over:
	// service_years, or LifeYears when shorter.
	AmortYears float64 `json:"amortized_years"`
}

// LedgerCost is the run's cost and its price per token.
type LedgerCost struct {
	// HierarchyUSD is the hierarchy's capital cost over the span: for each
	// tier, cost_usd x Copies x SpanS / (AmortYears x 365 x 86400).
	HierarchyUSD float64 `json:"hierarchy_usd"`
	// GPUUSD is tp x dp x Copies GPUs x [gpu] cost_per_hour x SpanS / 3600.
	GPUUSD       float64 `json:"gpu_usd"`
	TotalUSD     float64 `json:"total_usd"`
	PromptTokens int64   `json:"prompt_tokens"` // of finished requests
	OutputTokens int64   `json:"output_tokens"` // of finished requests
	// Each price charges the whole TotalUSD to one kind of token:
	// TotalUSD x 1e6 / tokens; absent with no such tokens.
	USDPerMPromptTokens *float64 `json:"usd_per_million_prompt_tokens,omitempty"`
	USDPerMOutputTokens *float64 `json:"usd_per_million_output_tokens,omitempty"`
}
