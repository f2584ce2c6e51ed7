package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// SharedPrefixConfig is a multi-tenant shared-prefix workload (the shape
// of inference-perf's shared_prefix data, which llm-d's precise-scheduling
// benchmark used): Groups customers, each with a system prompt of
// SystemTokens, and Users users per customer, each with a fixed question of
// QuestionTokens. Each request is a uniformly drawn (customer, user): its
// customer's prompt then its user's question. Arrivals are Poisson at the
// rate of each stage in turn.
type SharedPrefixConfig struct {
	Seed                                       int64
	BlockTokens                                int
	Groups, Users                              int
	SystemTokens, QuestionTokens, OutputTokens int
	Stages                                     []RateStage
}

// RateStage is Seconds of Poisson arrivals at Rate requests/s.
type RateStage struct{ Rate, Seconds float64 }

// ParseStages reads "RATExSECONDS,..." (e.g. "15x50,3x20").
func ParseStages(s string) ([]RateStage, error) {
	var out []RateStage
	for _, f := range strings.Split(s, ",") {
		r, d, ok := strings.Cut(strings.TrimSpace(f), "x")
		if !ok {
			return nil, fmt.Errorf("stage %q: want RATExSECONDS", f)
		}
		rate, err1 := strconv.ParseFloat(r, 64)
		sec, err2 := strconv.ParseFloat(d, 64)
		if err1 != nil || err2 != nil || !(rate > 0) || !(sec > 0) || math.IsInf(rate, 0) || math.IsInf(sec, 0) {
			return nil, fmt.Errorf("stage %q: rate and seconds must be numbers > 0", f)
		}
		out = append(out, RateStage{rate, sec})
	}
	return out, nil
}

// Validate reports the first unusable setting.
func (c SharedPrefixConfig) Validate() error {
	switch {
	case c.BlockTokens <= 0:
		return errors.New("block tokens must be > 0")
	case c.Groups < 1 || c.Users < 1:
		return errors.New("groups and users must be >= 1")
	case c.SystemTokens < 0 || c.QuestionTokens < 0 || c.SystemTokens+c.QuestionTokens < 1:
		return errors.New("system and question tokens must be >= 0, their sum >= 1")
	case c.OutputTokens < 1:
		return errors.New("output tokens must be >= 1")
	case len(c.Stages) == 0:
		return errors.New("at least one rate stage")
	}
	total := 0.0
	for _, s := range c.Stages {
		total += s.Seconds
	}
	if total*1000 > float64(maxMS) {
		return errors.New("the stages pass the simulated-time limit")
	}
	return nil
}

// GenerateSharedPrefix writes the workload as Mooncake JSONL. A customer's
// prompt fills its own blocks; the block holding the end of the prompt and
// the start of a question, and the question's, are the user's own.
func GenerateSharedPrefix(w io.Writer, c SharedPrefixConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x5eed))
	input := c.SystemTokens + c.QuestionTokens
	shared := c.SystemTokens / c.BlockTokens
	all := (input + c.BlockTokens - 1) / c.BlockTokens
	perGroup := int64(shared + c.Users*(all-shared))
	ids := make([]int64, all)
	bw := bufio.NewWriter(w)
	var line []byte
	start := 0.0 // ms
	for _, s := range c.Stages {
		end := start + s.Seconds*1000
		for t := start + rng.ExpFloat64()/s.Rate*1000; t < end; t += rng.ExpFloat64() / s.Rate * 1000 {
			g, u := rng.IntN(c.Groups), rng.IntN(c.Users)
			base := int64(g) * perGroup
			for k := range shared {
				ids[k] = base + int64(k)
			}
			for k := shared; k < all; k++ {
				ids[k] = base + int64(shared+u*(all-shared)+k-shared)
			}
			line = appendLine(line[:0], int64(t), input, c.OutputTokens, ids)
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
		start = end
	}
	return bw.Flush()
}
