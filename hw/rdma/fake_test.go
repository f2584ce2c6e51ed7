//go:build linux && (amd64 || arm64)

package rdma

import (
	"testing"

	"github.com/ebitengine/purego"

	"kvsim/hw/rdma/rdmatest"
)

// The fake libibverbs these tests drive is built by rdmatest (its C
// source is there, so the tests of the packages built on this one use it
// too).

// compileFake compiles the fake with extra compiler flags into a new
// folder the caller removes.
func compileFake(name string, flags ...string) (string, error) {
	return rdmatest.Compile(name, flags...)
}

// buildFakeVerbs returns the fake library, compiled once per test binary,
// or skips (fails under KVSIM_REQUIRE_ALL) without a C compiler.
func buildFakeVerbs(t *testing.T) string {
	t.Helper()
	return rdmatest.Path(t)
}

// fakeCall binds one of the fake's own exported helpers.
func fakeCall[F any](t *testing.T, name string) F {
	t.Helper()
	return libCall[F](t, buildFakeVerbs(t), name)
}

func libCall[F any](t *testing.T, lib, name string) F {
	t.Helper()
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	var f F
	purego.RegisterFunc(&f, addr)
	return f
}
