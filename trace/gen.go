package trace

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
)

// GenConfig describes a synthetic multi-turn chat workload.
type GenConfig struct {
	Seed               int64
	Requests           int     // total lines
	BlockTokens        int     // tokens per hash id
	SystemPromptTokens int     // shared by every request
	RatePerSec         float64 // Poisson arrival rate of new conversations
	MeanTurns          float64 // turns per conversation (geometric)
	MeanUserTokens     int     // per turn (lognormal around the mean, >= 1)
	MeanOutputTokens   int     // per turn (lognormal around the mean, >= 1)
	MeanThinkSec       float64 // gap between a reply and the next turn (exponential)
	MaxContextTokens   int     // conversations end when their context would exceed this
}

// DefaultGenConfig is the workload behind traces/synthetic.jsonl: about 7
// requests/s over 4.7 minutes, mean input near 7,300 tokens, 53% of block
// references repeats (the conversation trace has 37%).
func DefaultGenConfig() GenConfig {
	return GenConfig{
		Seed:               1,
		Requests:           2000,
		BlockTokens:        DefaultBlockTokens,
		SystemPromptTokens: 1024,
		RatePerSec:         3.5,
		MeanTurns:          2.5,
		MeanUserTokens:     3000,
		MeanOutputTokens:   400,
		MeanThinkSec:       20,
		MaxContextTokens:   32768,
	}
}

// Validate reports the first unusable setting.
func (c GenConfig) Validate() error {
	switch {
	case c.Requests < 0:
		return errors.New("requests must be >= 0")
	case c.BlockTokens <= 0:
		return errors.New("block tokens must be > 0")
	case c.SystemPromptTokens < 0:
		return errors.New("system prompt tokens must be >= 0")
	case !(c.RatePerSec > 0) || math.IsInf(c.RatePerSec, 0):
		return errors.New("rate must be > 0")
	case !(c.MeanTurns >= 1) || math.IsInf(c.MeanTurns, 0):
		return errors.New("mean turns must be >= 1")
	case c.MeanTurns > maxMeanTurns: // drawing a turn count takes ~mean steps
		return fmt.Errorf("mean turns must be <= %d (max_context ends conversations long before)", maxMeanTurns)
	case c.MeanUserTokens < 1:
		return errors.New("mean user tokens must be >= 1")
	case c.MeanOutputTokens < 1:
		return errors.New("mean output tokens must be >= 1")
	case !(c.MeanThinkSec >= 0) || math.IsInf(c.MeanThinkSec, 0):
		return errors.New("mean think time must be >= 0")
	case c.MaxContextTokens <= c.SystemPromptTokens:
		return errors.New("max context tokens must exceed the system prompt")
	}
	return nil
}

// maxMS is the latest timestamp the generator writes: the reader's
// MaxArrival, in ms.
const maxMS = MaxArrival / 1e6

const (
	maxMeanTurns = 10000
	// replyMSPerToken stands in for decoding time (50 tokens/s), so the next
	// turn of a conversation comes after the reply it answers.
	replyMSPerToken = 20
	// tokenSigma is the lognormal shape of message lengths: a heavy tail,
	// capped at maxTokenFactor times the mean.
	tokenSigma     = 0.8
	maxTokenFactor = 16
)

// Generate writes c.Requests lines of Mooncake JSONL, sorted by timestamp.
// The same config always yields the same bytes, and a shorter trace is a
// prefix of a longer one with the same settings.
func Generate(w io.Writer, c GenConfig) error {
	return generate(w, c, nil)
}

// conv is one conversation between turns.
type conv struct {
	id      int
	turns   int     // turns left, including the next one
	first   bool    // the next turn is the first
	context int     // tokens before the next user message
	full    []int64 // ids of the full blocks of the last input (then scratch)
}

// event is a new conversation (c == nil) or the next turn of c, at ms;
// seq breaks ties in the order events were scheduled.
type event struct {
	ms  int64
	seq int64
	c   *conv
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].ms != h[j].ms {
		return h[i].ms < h[j].ms
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// generate is Generate with a hook told the conversation of every line, for
// tests of the prefix property.
func generate(w io.Writer, c GenConfig, onLine func(conv int)) error {
	if err := c.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0x6b7673696d)) // "kvsim"
	bt := c.BlockTokens
	sysBlocks := c.SystemPromptTokens / bt
	nextID := int64(sysBlocks) // ids 0..sysBlocks-1 are the system prompt's full blocks

	bw := bufio.NewWriter(w)
	var (
		h     eventHeap
		seq   int64
		convs int
		line  []byte
	)
	push := func(ms int64, cv *conv) {
		heap.Push(&h, event{ms: ms, seq: seq, c: cv})
		seq++
	}
	push(0, nil)
	for n := 0; n < c.Requests; {
		ev := heap.Pop(&h).(event)
		if ev.ms > maxMS { // events come in time order: every later one is too
			return fmt.Errorf("arrivals pass the simulated-time limit of %s after %d requests: raise the rate or shorten think",
				fmtYears(float64(MaxArrival), 1), n)
		}
		cv := ev.c
		if cv == nil {
			cv = &conv{id: convs, turns: geometric(rng, c.MeanTurns), first: true, context: c.SystemPromptTokens}
			convs++
			for i := range sysBlocks {
				cv.full = append(cv.full, int64(i))
			}
			push(ev.ms+expMS(rng, 1/c.RatePerSec), nil)
		}
		user := tokens(rng, c.MeanUserTokens)
		input := cv.context + user
		if input > c.MaxContextTokens {
			if !cv.first {
				continue // the conversation is over
			}
			input = c.MaxContextTokens // clip the opening message to fit
		}
		cv.first = false
		// Blocks that were full in the previous input keep their ids; the
		// rest (including its partial last block, whose content grew) are new.
		ids := cv.full
		for len(ids) < numBlocks(input, bt) {
			ids = append(ids, nextID)
			nextID++
		}
		output := tokens(rng, c.MeanOutputTokens)

		line = appendLine(line[:0], ev.ms, input, output, ids)
		if _, err := bw.Write(line); err != nil {
			return err
		}
		if onLine != nil {
			onLine(cv.id)
		}
		n++

		cv.full = ids[:input/bt]
		cv.context = input + output
		cv.turns--
		if cv.turns > 0 {
			push(ev.ms+int64(output)*replyMSPerToken+expMS(rng, c.MeanThinkSec), cv)
		}
	}
	return bw.Flush()
}

// appendLine formats one request the way the Mooncake traces do.
func appendLine(b []byte, ms int64, input, output int, ids []int64) []byte {
	b = append(b, `{"timestamp": `...)
	b = strconv.AppendInt(b, ms, 10)
	b = append(b, `, "input_length": `...)
	b = strconv.AppendInt(b, int64(input), 10)
	b = append(b, `, "output_length": `...)
	b = strconv.AppendInt(b, int64(output), 10)
	b = append(b, `, "hash_ids": [`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, "]}\n"...)
}

// geometric draws a turn count >= 1 with the given mean.
func geometric(rng *rand.Rand, mean float64) int {
	n := 1
	for rng.Float64() >= 1/mean {
		n++
	}
	return n
}

// expMS draws an exponential gap with the given mean in seconds, as whole
// ms, at most maxMS+1 (so that adding it to a timestamp cannot wrap).
func expMS(rng *rand.Rand, meanSec float64) int64 {
	return int64(math.Min(math.Round(rng.ExpFloat64()*meanSec*1000), float64(maxMS+1)))
}

// tokens draws a lognormal message length with the given mean.
func tokens(rng *rand.Rand, mean int) int {
	x := float64(mean) * math.Exp(tokenSigma*rng.NormFloat64()-tokenSigma*tokenSigma/2)
	return int(math.Max(1, math.Min(math.Round(x), float64(mean)*maxTokenFactor)))
}
