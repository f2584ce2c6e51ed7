package experiment

import (
	"fmt"

	"kvsim/internal/atomicfile"
	"kvsim/results"
)

// InputError marks an error caused by what the user gave: a scenario, a
// trace, an option. Other errors are the machine's (a full disk, a failed
// device); an interrupted run returns ctx's error (context.Canceled).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// BadInput wraps err as an InputError (nil stays nil).
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{err}
}

// BadInputf is fmt.Errorf for an InputError.
func BadInputf(format string, args ...any) error {
	return BadInput(fmt.Errorf(format, args...))
}

// LossError ends a replay that lost copies to I/O errors or corruption:
// the run finished, but its link figures leave those moves out.
type LossError struct {
	Lost  int64  // copies lost, over all tiers
	First string // the first error, "" if none was kept
}

func (e *LossError) Error() string {
	first := ""
	if e.First != "" {
		first = " (first: " + e.First + ")"
	}
	return fmt.Sprintf("replay: %d copies lost to I/O errors or corruption%s; the link figures leave those moves out; --allow-loss accepts such a run", e.Lost, first)
}

// CheckLoss is a *LossError if r lost copies, else nil.
func CheckLoss(r *results.Replay) error {
	var n int64
	for _, v := range r.Lost {
		n += v
	}
	if n == 0 {
		return nil
	}
	e := &LossError{Lost: n}
	if len(r.Errors) > 0 {
		e.First = r.Errors[0]
	}
	return e
}

// PathErr strips the path from a file error whose message names the path
// already (or should name another: the file the user knows, not a
// temporary one).
func PathErr(err error) error { return atomicfile.Cause(err) }
