package trace

import (
	"context"
	"io"
)

// ctxReader ends a long read (converting a trace of gigabytes) once ctx
// is cancelled: its next Read returns ctx's error.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ContextReader is r whose next Read returns ctx's error once ctx is
// cancelled: for a long pass over a trace (hashing it whole).
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }
