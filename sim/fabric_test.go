package sim

import (
	"reflect"
	"testing"
)

// runFabric sends each hop at time 0 and returns when each lands (the
// evNet it posts), in send order.
func runFabric(t *testing.T, spec NICSpec, nodes int, hops [][2]int, bytes int64) []int64 {
	t.Helper()
	nics := make([]NICSpec, nodes)
	for i := range nics {
		nics[i] = spec
	}
	f, err := NewFabric(nics)
	if err != nil {
		t.Fatal(err)
	}
	s := &Sim{}
	for k, h := range hops {
		f.sendHop(0, s, int32(k), h[0], h[1], bytes)
	}
	for {
		if _, ok := f.next(); !ok {
			break
		}
		if err := f.step(); err != nil {
			t.Fatal(err)
		}
	}
	done := make([]int64, len(hops))
	for s.heap.len() > 0 {
		e := s.heap.pop()
		if e.kind != evNet {
			t.Fatalf("event %+v", e)
		}
		done[e.req] = e.t
	}
	return done
}

// TestFabricByHand: 1000-byte hops on 1 GB/s NICs (1000 ns each).
// Two senders to one receiver share its receive pipe: 1000 and 2000 ns.
// Disjoint pairs run at once. One sender to two receivers shares its send
// pipe. With 500 ns of latency and two lanes, a second hop between the
// same nodes waits out its latency beside the first and takes the pipes as
// they free (1500, 2500); with one lane it waits for the first to end
// (1500, 3000).
func TestFabricByHand(t *testing.T) {
	fast := NICSpec{Bandwidth: 1e9, Lanes: 1}
	for _, tc := range []struct {
		name string
		spec NICSpec
		hops [][2]int
		want []int64
	}{
		{"incast", fast, [][2]int{{0, 2}, {1, 2}}, []int64{1000, 2000}},
		{"disjoint", fast, [][2]int{{0, 1}, {2, 3}}, []int64{1000, 1000}},
		{"fan-out", fast, [][2]int{{0, 1}, {0, 2}}, []int64{1000, 2000}},
		{"full duplex", fast, [][2]int{{0, 1}, {1, 0}}, []int64{1000, 1000}},
		{"two lanes", NICSpec{Bandwidth: 1e9, Latency: 500, Lanes: 2}, [][2]int{{0, 1}, {0, 1}}, []int64{1500, 2500}},
		{"one lane", NICSpec{Bandwidth: 1e9, Latency: 500, Lanes: 1}, [][2]int{{0, 1}, {0, 1}}, []int64{1500, 3000}},
	} {
		if got := runFabric(t, tc.spec, 4, tc.hops, 1000); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: landed at %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestFabricSlowerEnd: a hop moves at the slower NIC's rate and holds both
// pipes for that long.
func TestFabricSlowerEnd(t *testing.T) {
	f, err := NewFabric([]NICSpec{{Bandwidth: 2e9}, {Bandwidth: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Sim{}
	f.sendHop(0, s, 0, 0, 1, 1000)
	for {
		if _, ok := f.next(); !ok {
			break
		}
		if err := f.step(); err != nil {
			t.Fatal(err)
		}
	}
	st := f.Stats()
	if e := s.heap.pop(); e.t != 1000 || st[0].SendBusyNs != 1000 || st[1].RecvBusyNs != 1000 || st[0].SendBytes != 1000 {
		t.Fatalf("landed at %d, stats %+v", e.t, st)
	}
	if _, err := NewFabric([]NICSpec{{Bandwidth: 0}}); err == nil {
		t.Fatal("a NIC of 0 B/s: no error")
	}
}
