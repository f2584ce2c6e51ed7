package scenario

// SLO is the [slo] table: targets a request meets or misses; 0 = unset.
type SLO struct {
	TTFTms float64 `key:"ttft_ms"`
	TPOTms float64 `key:"tpot_ms"`
}

// Set reports whether any target is set.
func (s SLO) Set() bool { return s.TTFTms > 0 || s.TPOTms > 0 }

func parseSLO(t *table) (SLO, error) {
	var s SLO
	return s, t.bind(&s)
}
