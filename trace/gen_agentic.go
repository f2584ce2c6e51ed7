package trace

import (
	"bufio"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// AgenticConfig is a workload of agentic sessions: each session a tree of
// LLM calls. A call at depth < Depth is followed by Fanout calls (the
// first continues the agent's loop, the others are branches: sub-agents or
// parallel tools), each after a tool wait drawn from an exponential
// distribution of mean ToolWaitSec. A call's input is its parent's input,
// its parent's output and the tool's result (ToolTokens): the context
// accumulates, so a call's prefix is its parent's prompt.
type AgenticConfig struct {
	Seed          int64
	BlockTokens   int
	Sessions      int
	RatePerSec    float64 // Poisson arrivals of new sessions
	Depth, Fanout int
	SystemTokens  int // the root call's prompt, shared by every session
	TaskTokens    int // the root call's own task, after the system prompt
	ToolTokens    int // a tool result added before each later call
	OutputTokens  int
	ToolWaitSec   float64
	// ToolWaitSpread > 0 gives each session its own mean tool wait:
	// ToolWaitSec times a lognormal factor of mean 1 and log-sd
	// ToolWaitSpread (some agents wait on slow tools, others on fast
	// ones); 0: every session waits alike.
	ToolWaitSpread float64
}

// Validate reports the first unusable setting.
func (c AgenticConfig) Validate() error {
	switch {
	case c.BlockTokens <= 0:
		return errors.New("block tokens must be > 0")
	case c.Sessions < 0:
		return errors.New("sessions must be >= 0")
	case !(c.RatePerSec > 0) || math.IsInf(c.RatePerSec, 0):
		return errors.New("rate must be > 0")
	case c.Depth < 0 || c.Fanout < 1:
		return errors.New("depth must be >= 0 and fan-out >= 1")
	case c.SystemTokens < 0 || c.TaskTokens < 1 || c.ToolTokens < 1 || c.OutputTokens < 1:
		return errors.New("system tokens must be >= 0, task, tool and output tokens >= 1")
	case !(c.ToolWaitSec >= 0) || math.IsInf(c.ToolWaitSec, 0):
		return errors.New("tool wait must be >= 0")
	case !(c.ToolWaitSpread >= 0) || c.ToolWaitSpread > 5:
		return errors.New("tool wait spread must be in 0..5")
	}
	calls := 1
	for range c.Depth {
		if calls > 100000/c.Fanout {
			return errors.New("fan-out^depth calls a session: at most 100000")
		}
		calls *= c.Fanout
	}
	return nil
}

// agenticCall is one line before the lines are sorted by time.
type agenticCall struct {
	ms, wait      int64
	id, parent    int64
	input, output int
	ids           []int64
}

// GenerateAgentic writes the sessions as Mooncake JSONL with call_id,
// parent_call_id (-1 for a root) and delay (the tool wait, ms) on every
// line, sorted by timestamp (a call's is its parent's plus 20 ms per output
// token plus its wait: what an open-loop replay would use). Ids are chained
// prefixes: a call's full blocks are its parent's full blocks then its own.
func GenerateAgentic(w io.Writer, c AgenticConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(c.Seed), 0xa6e7))
	next := int64(0) // block id counter
	sys := make([]int64, c.SystemTokens/c.BlockTokens)
	for k := range sys {
		sys[k] = next
		next++
	}
	var calls []agenticCall
	var id int64
	t := 0.0
	for range c.Sessions {
		t += rng.ExpFloat64() / c.RatePerSec * 1000
		type node struct {
			call  int
			depth int
		}
		mean := c.ToolWaitSec
		if c.ToolWaitSpread > 0 { // drawn only then: a spread of 0 keeps the traces it always gave
			mean *= math.Exp(c.ToolWaitSpread*rng.NormFloat64() - c.ToolWaitSpread*c.ToolWaitSpread/2)
		}
		root := agenticCall{ms: int64(t), id: id, parent: -1, input: c.SystemTokens + c.TaskTokens, output: c.OutputTokens}
		id++
		root.ids, next = extendIDs(sys, len(sys)*c.BlockTokens, root.input, c.BlockTokens, next)
		calls = append(calls, root)
		stack := []node{{len(calls) - 1, 0}}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n.depth == c.Depth {
				continue
			}
			p := calls[n.call]
			for range c.Fanout {
				wait := int64(rng.ExpFloat64() * mean * 1000)
				in := p.input + p.output + c.ToolTokens
				k := agenticCall{ms: p.ms + 20*int64(p.output) + wait + 1, wait: wait, id: id, parent: p.id,
					input: in, output: c.OutputTokens}
				id++
				k.ids, next = extendIDs(p.ids[:p.input/c.BlockTokens], p.input/c.BlockTokens*c.BlockTokens, in, c.BlockTokens, next)
				calls = append(calls, k)
				stack = append(stack, node{len(calls) - 1, n.depth + 1})
			}
		}
	}
	if len(calls) > 0 && calls[len(calls)-1].ms > maxMS {
		return errors.New("arrivals pass the simulated-time limit")
	}
	// A child is at least 1 ms after its parent: sorted, it follows it.
	slices.SortStableFunc(calls, func(a, b agenticCall) int {
		switch {
		case a.ms < b.ms:
			return -1
		case a.ms > b.ms:
			return 1
		}
		return 0
	})
	bw := bufio.NewWriter(w)
	var line []byte
	for _, k := range calls {
		if k.ms > maxMS {
			return errors.New("arrivals pass the simulated-time limit")
		}
		line = appendLine(line[:0], k.ms, k.input, k.output, k.ids)
		line = line[:len(line)-2] // "}\n": add the session fields
		line = append(line, `, "call_id": `...)
		line = strconv.AppendInt(line, k.id, 10)
		line = append(line, `, "parent_call_id": `...)
		line = strconv.AppendInt(line, k.parent, 10)
		line = append(line, `, "delay": `...)
		line = strconv.AppendInt(line, k.wait, 10)
		line = append(line, "}\n"...)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// extendIDs returns prefix's ids (covering have tokens, whole blocks) then
// new ids for the rest of tokens.
func extendIDs(prefix []int64, have, tokens, bt int, next int64) ([]int64, int64) {
	ids := slices.Clone(prefix)
	for n := have; n < tokens; n += bt {
		ids = append(ids, next)
		next++
	}
	return ids, next
}
