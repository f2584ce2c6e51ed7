package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"kvsim/internal/atomicfile"
)

// Request is one row of requests.csv: one request under one policy. Times
// are ns here and ms (shortest decimal) in the file.
type Request struct {
	Policy           string
	Seq              int64
	ArrivalNs        int64
	QueueNs          int64
	DepWaitNs        int64
	LoadNs           int64
	ComputeNs        int64
	TTFTNs           int64
	DoneNs           int64
	InputTokens      int
	OutputTokens     int
	Blocks           int
	HitBlocks        []int64 // per tier, in the header's order
	BlockHits        int
	RecomputedTokens int
	Rejected         bool
	// TPOTNs is (DoneNs - first token) / (OutputTokens - 1), in whole ns;
	// NoTPOT (an empty cell) for fewer than 2 output tokens, a rejected
	// request, or a file without the column.
	TPOTNs      int64
	E2ENs       int64 // arrival to last token (0 for a rejected request, like TTFTNs)
	LoadWaitNs  int64 // prefill issued until its loads had landed (first prefill)
	Preemptions int   // times it lost its HBM and was re-queued
	Instance    int   // the cluster instance that ran it: 0 without [cluster], -1 refused by the router
	RunID       string
}

// NoTPOT is Request.TPOTNs of a request without a time per output token.
const NoTPOT = -1

// TPOT is the time per output token of a request that got its first token
// at firstToken and its last at done: whole ns, or NoTPOT for fewer than 2
// output tokens. The decode steps after the first token produce the other
// outputTokens-1 tokens.
func TPOT(firstToken, done int64, outputTokens int) int64 {
	if outputTokens < 2 {
		return NoTPOT
	}
	return (done - firstToken) / int64(outputTokens-1)
}

// RequestsHeader names requests.csv's columns; hit columns follow the
// tiers. run_id comes last, the same on every row: readers that pick
// columns by name (the report, pandas) are not disturbed by it.
func RequestsHeader(tiers []string) string {
	var b strings.Builder
	b.WriteString("policy,seq,arrival_ms,queue_ms,dependency_wait_ms,load_ms,compute_ms,ttft_ms,done_ms,input_tokens,output_tokens,blocks")
	for _, t := range tiers {
		b.WriteString(",hit_blocks_" + t)
	}
	// Columns added later go before run_id, so older ones keep their place.
	b.WriteString(",block_hits,recomputed_tokens,rejected,tpot_ms,e2e_ms,load_wait_ms,preemptions,instance,run_id\n")
	return b.String()
}

func appendMS(b []byte, ns int64) []byte {
	return strconv.AppendFloat(b, float64(ns)/1e6, 'f', -1, 64)
}

// AppendRequest appends r as one requests.csv line; it allocates nothing
// once b has grown.
func AppendRequest(b []byte, r *Request) []byte {
	b = append(b, r.Policy...)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Seq, 10)
	for _, v := range [...]int64{r.ArrivalNs, r.QueueNs, r.DepWaitNs, r.LoadNs, r.ComputeNs, r.TTFTNs, r.DoneNs} {
		b = append(b, ',')
		b = appendMS(b, v)
	}
	for _, v := range [...]int{r.InputTokens, r.OutputTokens, r.Blocks} {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(v), 10)
	}
	for _, h := range r.HitBlocks {
		b = append(b, ',')
		b = strconv.AppendInt(b, h, 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.BlockHits), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.RecomputedTokens), 10)
	b = append(b, ',')
	b = strconv.AppendBool(b, r.Rejected)
	b = append(b, ',')
	if r.TPOTNs >= 0 {
		b = appendMS(b, r.TPOTNs)
	}
	b = append(b, ',')
	b = appendMS(b, r.E2ENs)
	b = append(b, ',')
	b = appendMS(b, r.LoadWaitNs)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Preemptions), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Instance), 10)
	b = append(b, ',')
	b = append(b, r.RunID...)
	return append(b, '\n')
}

// WriteRequests writes requests.csv at path, atomically: the header for
// tiers, then each part (a file of AppendRequest lines) in order.
func WriteRequests(path string, tiers []string, parts []string) error {
	tmp, err := stageRequests(path, tiers, parts)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// stageRequests writes what WriteRequests puts at path to a temporary
// file beside it and returns its name.
func stageRequests(path string, tiers []string, parts []string) (string, error) {
	return atomicfile.Stage(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, RequestsHeader(tiers)); err != nil {
			return err
		}
		for _, p := range parts {
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, in)
			in.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// RequestsReader reads requests.csv row by row. It picks columns by name,
// so files of older kvsims (no rejected, run_id, tpot_ms, e2e_ms,
// load_wait_ms, preemptions or instance column) read too: a missing column reads as
// its zero value, tpot_ms as NoTPOT.
type RequestsReader struct {
	Tiers    []string // from the hit_blocks_* columns
	HasRunID bool     // the file has a run_id column
	HasTPOT  bool     // the file has a tpot_ms column (kvsims before it had none)
	path     string
	f        *os.File
	r        *csv.Reader
	col      map[string]int
}

// OpenRequests opens a requests.csv and reads its header; it must have at
// least the policy and ttft_ms columns.
func OpenRequests(path string) (*RequestsReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(f)
	r.ReuseRecord = true
	hdr, err := r.Read()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a kvsim requests.csv: %v", path, err)
	}
	rr := &RequestsReader{path: path, f: f, r: r, col: map[string]int{}}
	for i, h := range hdr {
		rr.col[h] = i
		if t, ok := strings.CutPrefix(h, "hit_blocks_"); ok {
			rr.Tiers = append(rr.Tiers, t)
		}
	}
	_, ok1 := rr.col["policy"]
	_, ok2 := rr.col["ttft_ms"]
	if !ok1 || !ok2 {
		f.Close()
		return nil, fmt.Errorf("%s: not a kvsim requests.csv: no policy or ttft_ms column", path)
	}
	_, rr.HasRunID = rr.col["run_id"]
	_, rr.HasTPOT = rr.col["tpot_ms"]
	return rr, nil
}

// Close closes the file.
func (rr *RequestsReader) Close() error { return rr.f.Close() }

// Next reads the next row into q (its HitBlocks reused); io.EOF at the end.
// A malformed value is an error naming the file, line and column.
func (rr *RequestsReader) Next(q *Request) error {
	rec, err := rr.r.Read()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return fmt.Errorf("%s: %v", rr.path, err)
	}
	bad := func(name string) error {
		line, _ := rr.r.FieldPos(rr.col[name])
		return fmt.Errorf("%s:%d: bad %s %q", rr.path, line, name, rec[rr.col[name]])
	}
	str := func(name string) string {
		if i, ok := rr.col[name]; ok {
			return rec[i]
		}
		return ""
	}
	var err1 error
	num := func(name string) int64 {
		s := str(name)
		if s == "" || err1 != nil {
			return 0
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			err1 = bad(name)
		}
		return v
	}
	ms := func(name string) int64 {
		s := str(name)
		if s == "" || err1 != nil {
			return 0
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			err1 = bad(name)
		}
		return int64(math.Round(v * 1e6))
	}
	// ttft_ms first: it is the column every reader needs.
	*q = Request{TTFTNs: ms("ttft_ms"), Policy: str("policy"), RunID: str("run_id"), Rejected: str("rejected") == "true",
		HitBlocks: q.HitBlocks[:0]}
	q.Seq = num("seq")
	q.ArrivalNs, q.QueueNs, q.DepWaitNs = ms("arrival_ms"), ms("queue_ms"), ms("dependency_wait_ms")
	q.LoadNs, q.ComputeNs, q.DoneNs = ms("load_ms"), ms("compute_ms"), ms("done_ms")
	q.InputTokens, q.OutputTokens, q.Blocks = int(num("input_tokens")), int(num("output_tokens")), int(num("blocks"))
	for _, t := range rr.Tiers {
		q.HitBlocks = append(q.HitBlocks, num("hit_blocks_"+t))
	}
	q.BlockHits, q.RecomputedTokens = int(num("block_hits")), int(num("recomputed_tokens"))
	q.TPOTNs = NoTPOT
	if str("tpot_ms") != "" {
		q.TPOTNs = ms("tpot_ms")
	}
	q.E2ENs, q.LoadWaitNs, q.Preemptions = ms("e2e_ms"), ms("load_wait_ms"), int(num("preemptions"))
	q.Instance = int(num("instance"))
	return err1
}
