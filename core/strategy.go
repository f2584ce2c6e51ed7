package core

import (
	"fmt"
	"strconv"
	"strings"
)

// Promotion says what a hit in a lower tier leaves behind in HBM. The block
// is always loaded into HBM for the request that needs it; the question is
// whether it stays cached there afterwards.
type Promotion uint8

const (
	// PromoteAlways keeps every lower-tier hit in HBM (vLLM, SGLang HiCache).
	PromoteAlways Promotion = iota
	// PromoteSecondHit keeps it only from its second lower-tier hit on, as
	// Mooncake Store promotes an SSD object to DRAM on its second access.
	PromoteSecondHit
	// PromoteNever serves lower-tier hits from a transient HBM copy that is
	// dropped when the request ends (the lower tier stays authoritative).
	PromoteNever
)

// Prefetch is what happens to the lower-tier prefix of a request that has
// to queue for HBM (SGLang HiCache's prefetch policies).
type Prefetch uint8

const (
	// PrefetchOff loads everything at admission.
	PrefetchOff Prefetch = iota
	// PrefetchBestEffort copies prefix blocks from storage tiers (below
	// tier 1) into tier 1 while the request waits, and at admission uses
	// whatever has landed (HiCache best_effort).
	PrefetchBestEffort
	// PrefetchWaitComplete holds the request until its prefetch landed
	// (HiCache wait_complete).
	PrefetchWaitComplete
	// PrefetchTimeout holds it until the prefetch landed or the timeout
	// passed, whichever is first (HiCache timeout).
	PrefetchTimeout
)

// Stage says what a hit below tier 1 leaves in tier 1 on its way to HBM.
type Stage uint8

const (
	// StageCopy loads it through tier 1 and keeps a copy there (LMCache,
	// Mooncake: a storage hit is staged in host memory).
	StageCopy Stage = iota
	// StagePass moves it straight into HBM, leaving tier 1 as it was.
	StagePass
)

// ParseStage reads "copy" or "pass" ("" is copy).
func ParseStage(s string) (Stage, error) {
	switch s {
	case "", "copy":
		return StageCopy, nil
	case "pass":
		return StagePass, nil
	}
	return 0, fmt.Errorf("unknown stage %q (want \"copy\" or \"pass\")", s)
}

// Strategy gathers the admission, write, promotion and prefetch choices
// of one policy entry. The zero value is Mooncake/vLLM-like defaults:
// admit always, write back on eviction, promote always, no prefetch.
type Strategy struct {
	// AdmitAfter: a block enters a lower tier (by demotion or write-through)
	// only once it has been referenced this many times (vLLM's store
	// threshold, HiCache's selective write-through). 0 and 1 admit always.
	AdmitAfter int
	// WriteThrough copies each newly computed block to tier 1 as soon as it
	// exists (HiCache write_through, Mooncake's SSD write-through); otherwise
	// blocks go down only when evicted (write-back, offload-on-evict).
	WriteThrough    bool
	Promotion       Promotion
	Prefetch        Prefetch
	PrefetchTimeout int64 // ns, for PrefetchTimeout
	// RecomputeWhenCheaper cuts a request's usable prefix where loading
	// the rest from lower tiers would take longer than recomputing it
	// ("compute or load", as Cake and LMCache's blending ask), judged by
	// Config.Cost with the links' current backlog. Only a suffix of the
	// prefix can be dropped: block k's KV needs every block before it.
	RecomputeWhenCheaper bool
	// Stage: whether a hit below tier 1 leaves a copy in tier 1.
	Stage Stage
}

// ParseRecompute reads "never" or "when-cheaper".
func ParseRecompute(s string) (bool, error) {
	switch s {
	case "", "never":
		return false, nil
	case "when-cheaper":
		return true, nil
	}
	return false, fmt.Errorf("unknown recompute %q (want \"never\" or \"when-cheaper\")", s)
}

// ParseAdmission reads "always" or "after:K".
func ParseAdmission(s string) (int, error) {
	switch {
	case s == "" || s == "always":
		return 0, nil
	case strings.HasPrefix(s, "after:"):
		k, err := strconv.Atoi(strings.TrimPrefix(s, "after:"))
		if err != nil || k < 1 {
			return 0, fmt.Errorf("want \"after:K\" with K >= 1, got %q", s)
		}
		return k, nil
	}
	return 0, fmt.Errorf("unknown admission %q (want \"always\" or \"after:K\")", s)
}

// ParseWrite reads "back" or "through".
func ParseWrite(s string) (bool, error) {
	switch s {
	case "", "back":
		return false, nil
	case "through":
		return true, nil
	}
	return false, fmt.Errorf("unknown write policy %q (want \"back\" or \"through\")", s)
}

// ParsePromotion reads "always", "second-hit" or "never".
func ParsePromotion(s string) (Promotion, error) {
	switch s {
	case "", "always":
		return PromoteAlways, nil
	case "second-hit":
		return PromoteSecondHit, nil
	case "never":
		return PromoteNever, nil
	}
	return 0, fmt.Errorf("unknown promotion %q (want \"always\", \"second-hit\" or \"never\")", s)
}

// ParsePrefetch reads "off", "best_effort", "wait_complete" or "timeout".
func ParsePrefetch(s string) (Prefetch, error) {
	switch s {
	case "", "off":
		return PrefetchOff, nil
	case "best_effort":
		return PrefetchBestEffort, nil
	case "wait_complete":
		return PrefetchWaitComplete, nil
	case "timeout":
		return PrefetchTimeout, nil
	}
	return 0, fmt.Errorf("unknown prefetch %q (want \"off\", \"best_effort\", \"wait_complete\" or \"timeout\")", s)
}
