package validate

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"

	"kvsim/experiment"
	"kvsim/trace"
)

// The plain CSV format: a header naming at least these columns, in any
// order (others are ignored), then one request a row. Times are decimal
// seconds; arrivals from any origin (rebased to the earliest).
var csvColumns = [...]string{"arrival_s", "input_tokens", "output_tokens", "ttft_s", "e2e_s"}

// CSVHeader is the header kvsim documents (and writes in its tests).
const CSVHeader = "arrival_s,input_tokens,output_tokens,ttft_s,e2e_s"

func loadCSV(ctx context.Context, path string) (*Records, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := parseCSV(trace.ContextReader(ctx, f), path)
	if err != nil {
		return nil, err
	}
	return &Records{File: path, Recs: recs}, nil
}

func parseCSV(r io.Reader, name string) ([]Record, error) {
	cr := csv.NewReader(io.LimitReader(r, maxResult))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, lineErr(name, 1, "", "empty: expected the header %s", CSVHeader)
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	var col [len(csvColumns)]int
	for i := range col {
		col[i] = -1
	}
	for j, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		for i, c := range csvColumns {
			if h == c {
				if col[i] >= 0 {
					return nil, lineErr(name, 1, c, "named twice in the header")
				}
				col[i] = j
			}
		}
	}
	for i, c := range col {
		if c < 0 {
			return nil, lineErr(name, 1, csvColumns[i], "missing from the header (expected %s)", CSVHeader)
		}
	}
	var recs []Record
	for {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		rec := Record{Line: line}
		cell := func(i int) (string, error) {
			if col[i] >= len(row) {
				return "", lineErr(name, line, csvColumns[i], "missing: the row has %d fields", len(row))
			}
			return strings.TrimSpace(row[col[i]]), nil
		}
		var t [3]int64
		for k, i := range [...]int{0, 3, 4} {
			s, err := cell(i)
			if err != nil {
				return nil, err
			}
			if t[k], err = parseSeconds(s); err != nil {
				return nil, lineErr(name, line, csvColumns[i], "%q: not a time in seconds", clipS(s))
			}
		}
		for k, dst := range [...]*int{&rec.InputTokens, &rec.OutputTokens} {
			s, err := cell(1 + k)
			if err != nil {
				return nil, err
			}
			if *dst, err = strconv.Atoi(s); err != nil {
				return nil, lineErr(name, line, csvColumns[1+k], "%q: not a whole number", clipS(s))
			}
		}
		rec.ArrivalNs, rec.TTFTNs, rec.E2ENs = t[0], t[1], t[2]
		if err := check(name, &rec, "input_tokens", "output_tokens", "ttft_s", "e2e_s"); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	finish(recs)
	return recs, nil
}

func clipS(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return lineErr(name, pe.Line, "", "malformed CSV: %v", pe.Err)
	}
	return experiment.BadInputf("%s: %v", name, experiment.PathErr(err))
}
