package policy

import (
	"fmt"
	"testing"
)

// TestHolders: a held block is resident but never a victim, and its age
// counts from its release.
func TestHolders(t *testing.T) {
	for _, name := range []string{"lru", "prefix-lru"} {
		p, _ := New(name, Config{})
		h := p.(Holder)
		for i, b := range []Block{0, 1, 2, 3} { // 0 is the oldest
			p.Insert(b, 1, int64(i))
		}
		h.Acquire(0)
		h.Acquire(2)
		p.Access(2, 10) // a held block: refreshed at release instead
		var got []Block
		for {
			v, ok := p.Evict(11, NoPins)
			if !ok {
				break
			}
			got = append(got, v)
		}
		if fmt.Sprint(got) != "[1 3]" || p.Len() != 2 {
			t.Errorf("%s: victims %v, Len %d; want [1 3], 2", name, got, p.Len())
		}
		p.Insert(4, 1, 12)
		h.Release(2, 13) // released after 4 was inserted: 4 is now older
		h.Release(0, 13)
		got = got[:0]
		for {
			v, ok := p.Evict(14, NoPins)
			if !ok {
				break
			}
			got = append(got, v)
		}
		want := "[4 2 0]" // lru: 2 then 0 released, 0 most recent
		if name == "prefix-lru" {
			want = "[4 0 2]" // same now: the later call is the deeper block
		}
		if fmt.Sprint(got) != want || p.Len() != 0 {
			t.Errorf("%s: victims %v, Len %d; want %s", name, got, p.Len(), want)
		}
	}
}
