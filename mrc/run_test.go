package mrc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("1000, 10%,99999999999999999999,1e999%")
	if err != nil {
		t.Fatal(err)
	}
	want := []Size{{"1000", 1000, 0}, {"10%", 0, 10}, {"99999999999999999999", math.MaxInt, 0}, {"1e999%", 0, math.Inf(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for in, msg := range map[string]string{
		"x":                     `bad size "x" (want blocks like 1000 or a percentage like 10%)`,
		"-99999999999999999999": `bad size "-99999999999999999999" (want blocks like 1000 or a percentage like 10%)`,
		"NaN%":                  `bad size "NaN%" (want blocks like 1000 or a percentage like 10%)`,
		"0":                     `size "0" must be > 0`,
		"10,-5%":                `size "-5%" must be > 0`,
	} {
		if _, err := ParseSizes(in); err == nil || err.Error() != msg {
			t.Errorf("ParseSizes(%q): %v, want %s", in, err, msg)
		}
	}
}

func TestResolveSizes(t *testing.T) {
	sizes, err := ParseSizes("5,10%,50,150%,999%")
	if err != nil {
		t.Fatal(err)
	}
	blocks, capped, err := ResolveSizes(sizes, 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{5, 4, 40, 40, 40}; !reflect.DeepEqual(blocks, want) {
		t.Errorf("blocks %v, want %v", blocks, want)
	}
	if want := []string{"", "", "50", "150%", "999%"}; !reflect.DeepEqual(capped, want) {
		t.Errorf("capped %q, want %q", capped, want)
	}
	sizes, _ = ParseSizes("1%")
	if _, _, err := ResolveSizes(sizes, 40); err == nil || err.Error() != "1% of 40 distinct blocks is 0 blocks" {
		t.Errorf("1%% of 40: %v", err)
	}
}

// SampledCurve without a sample is Curve with the capped labels; with one
// it reports the sizes asked for and the expected sample's accesses.
func TestSampledCurve(t *testing.T) {
	tr := randomTrace(rand.New(rand.NewPCG(7, 7)), 400)
	specs := []Spec{mustSpec(t, "lru"), mustSpec(t, "fifo")}
	sizes := []int{3, tr.Distinct}
	capped := []string{"", "200%"}
	ctx := context.Background()
	want, err := Curve(ctx, tr, specs, sizes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Capped = capped[i%2]
	}
	for _, rate := range []float64{0, 1} {
		got, run, err := SampledCurve(ctx, tr, specs, sizes, capped, rate, Options{})
		if err != nil || run != tr || !reflect.DeepEqual(got, want) {
			t.Errorf("rate %g: %+v (trace %p, %v)\nwant %+v (trace %p)", rate, got, run, err, want, tr)
		}
	}
	got, run, err := SampledCurve(ctx, tr, specs, sizes, capped, 0.5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if run == tr || run.Distinct >= tr.Distinct {
		t.Errorf("rate 0.5 replayed %d of %d distinct blocks", run.Distinct, tr.Distinct)
	}
	exp := int64(math.Round(0.5 * float64(len(tr.Blocks))))
	for i, r := range got {
		if r.SizeBlocks != sizes[i%2] || r.Capped != capped[i%2] || r.Accesses != exp {
			t.Errorf("rate 0.5, point %d: %+v; want size %d, capped %q, %d accesses", i, r, sizes[i%2], capped[i%2], exp)
		}
	}
	var empty *EmptySampleError
	if _, _, err := SampledCurve(ctx, tr, specs, sizes, capped, 1e-12, Options{}); !errors.As(err, &empty) || empty.Distinct != tr.Distinct {
		t.Errorf("rate 1e-12: %v, want an EmptySampleError", err)
	}
}

// BenchCurve's miss ratios are the curve's, Belady's included (its timed
// pass sees the trace twice, its reported ratio must not).
func TestBenchCurveMissRatio(t *testing.T) {
	tr := randomTrace(rand.New(rand.NewPCG(3, 9)), 300)
	specs := []Spec{mustSpec(t, "lru"), mustSpec(t, "belady"), mustSpec(t, StackLRU)}
	sizes := []int{2, 20}
	ctx := context.Background()
	for _, m := range []Mode{BlockMode, PrefixMode} {
		curve, err := Curve(ctx, tr, specs, sizes, Options{Mode: m})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := BenchCurve(ctx, tr, specs, sizes, m)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(curve) {
			t.Fatalf("%s: %d rows, want %d", m, len(rows), len(curve))
		}
		for i, r := range rows {
			if r.Policy != curve[i].Policy || r.SizeBlocks != curve[i].SizeBlocks || r.MissRatio != curve[i].MissRatio {
				t.Errorf("%s: row %d %+v, curve %+v", m, i, r, curve[i])
			}
		}
	}
}
