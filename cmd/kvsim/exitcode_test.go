package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"kvsim/experiment"
)

// The library's error kinds keep their exit statuses, wrapped or not.
func TestExitCodeOfLibraryErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{experiment.BadInputf("bad"), 2},
		{fmt.Errorf("run: %w", experiment.BadInputf("bad")), 2},
		{&experiment.LossError{Lost: 1}, 3},
		{fmt.Errorf("x: %w", &experiment.LossError{Lost: 1}), 3},
		{fmt.Errorf("x: %w", context.Canceled), 130},
		{errors.New("disk"), 1},
	} {
		if got := exitCode(c.err, io.Discard); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
