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
	"time"
)

// GenConfig describes a synthetic multi-turn chat workload.
type GenConfig struct {
	Seed               int64
	Requests           int     `key:"requests"` // total lines
	BlockTokens        int     // tokens per hash id
	SystemPromptTokens int     `key:"system_tokens"` // shared by every request
	RatePerSec         float64 `key:"rate"`          // Poisson arrival rate of new conversations
	MeanTurns          float64 `key:"turns"`         // turns per conversation (geometric)
	MeanUserTokens     int     `key:"user_tokens"`   // per turn (lognormal around the mean, >= 1)
	MeanOutputTokens   int     `key:"output_tokens"` // per turn (lognormal around the mean, >= 1)
	MeanThinkSec       float64 // gap between a reply and the next turn (exponential)
	MaxContextTokens   int     `key:"max_context"` // conversations end when their context would exceed this
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

// GenerateAzure writes the same requests as Generate in the Azure LLM
// inference trace's CSV (TIMESTAMP, ContextTokens, GeneratedTokens): the
// arrival times and lengths without the block ids, as the public Azure
// traces have them. The timestamps count from 2024-01-01 00:00:00.
func GenerateAzure(w io.Writer, c GenConfig) error {
	g, err := newGenerator(c)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var line []byte
	for {
		var rq genRequest
		if err := g.next(&rq); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		t := base.Add(time.Duration(rq.ms) * time.Millisecond)
		line = t.AppendFormat(line[:0], "2006-01-02 15:04:05.0000000")
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(rq.input), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(rq.output), 10)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
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
	g, err := newGenerator(c)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	var line []byte
	for {
		var rq genRequest
		if err := g.next(&rq); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		line = appendLine(line[:0], rq.ms, rq.input, rq.output, rq.ids)
		if _, err := bw.Write(line); err != nil {
			return err
		}
		if onLine != nil {
			onLine(rq.conv)
		}
	}
	return bw.Flush()
}

// genRequest is one generated line; ids are valid until the next call.
type genRequest struct {
	ms            int64
	input, output int
	ids           []int64
	conv          int
}

// generator yields the lines of Generate one at a time, so the reader can
// take them without formatting and parsing JSON.
type generator struct {
	c         GenConfig
	rng       *rand.Rand
	sysBlocks int
	nextID    int64
	h         eventHeap
	seq       int64
	convs     int
	n         int   // lines produced
	err       error // sticky
}

func newGenerator(c GenConfig) (*generator, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := &generator{c: c, rng: rand.New(rand.NewPCG(uint64(c.Seed), 0x6b7673696d))} // "kvsim"
	g.sysBlocks = c.SystemPromptTokens / c.BlockTokens
	g.nextID = int64(g.sysBlocks) // ids 0..sysBlocks-1 are the system prompt's full blocks
	g.push(0, nil)
	return g, nil
}

func (g *generator) push(ms int64, cv *conv) {
	heap.Push(&g.h, event{ms: ms, seq: g.seq, c: cv})
	g.seq++
}

// next fills rq with the next line, or returns io.EOF after c.Requests.
func (g *generator) next(rq *genRequest) error {
	if g.err != nil {
		return g.err
	}
	c, rng, bt := &g.c, g.rng, g.c.BlockTokens
	for g.n < c.Requests {
		ev := heap.Pop(&g.h).(event)
		if ev.ms > maxMS { // events come in time order: every later one is too
			g.err = fmt.Errorf("arrivals pass the simulated-time limit of %s after %d requests: raise the rate or shorten think",
				fmtYears(float64(MaxArrival), 1), g.n)
			return g.err
		}
		cv := ev.c
		if cv == nil {
			cv = &conv{id: g.convs, turns: geometric(rng, c.MeanTurns), first: true, context: c.SystemPromptTokens}
			g.convs++
			for i := range g.sysBlocks {
				cv.full = append(cv.full, int64(i))
			}
			g.push(ev.ms+expMS(rng, 1/c.RatePerSec), nil)
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
			ids = append(ids, g.nextID)
			g.nextID++
		}
		output := tokens(rng, c.MeanOutputTokens)
		*rq = genRequest{ms: ev.ms, input: input, output: output, ids: ids, conv: cv.id}
		g.n++

		cv.full = ids[:input/bt]
		cv.context = input + output
		cv.turns--
		if cv.turns > 0 {
			g.push(ev.ms+int64(output)*replyMSPerToken+expMS(rng, c.MeanThinkSec), cv)
		}
		return nil
	}
	g.err = io.EOF
	return g.err
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
