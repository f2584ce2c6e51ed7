package trace

// fmtKVEvents is kvsim's KV-event log (docs/events.md), read through the
// converter the kvsim command sets: the log's GPU stores become requests.
const fmtKVEvents = 4

func init() {
	registerFormat(FormatSpec{Name: "kvevents", ID: fmtKVEvents, Doc: "a `kvsim events record` log: its GPU stores as requests",
		Fixture: "kvevents_tiny.kvev", line: (*Reader).mooncakeLine, Magic: "KVSEVL01",
		Row: FormatRow{File: "binary event log (docs/events.md); one request per instance's GPU `BlockStored` batch", Times: "the batch's `ts`, s",
			IDs: "block hashes numbered by first sight; a stored parent's chain prefixes them", Sessions: "none"}})
}
