package param

import (
	"fmt"
	"slices"
)

// Entry is what an extension's spec says of itself to its registry: its
// name and its rank, the place it takes in lists, the reference and the
// docs.
type Entry interface {
	Ident() (name string, rank int)
}

// Registry holds the implementations of one extension point (routers,
// tier kinds, trace formats), each registered once from its own file's
// init, in rank order.
type Registry[S Entry] struct {
	What  string // what an entry is, for the duplicate's panic: "router"
	specs []S
}

// Add registers s; a name or rank taken twice is a programming error.
func (r *Registry[S]) Add(s S) {
	name, rank := s.Ident()
	for _, o := range r.specs {
		if n, k := o.Ident(); n == name || k == rank {
			panic(fmt.Sprintf("%s %s registered twice, or its rank %d taken by %s", r.What, name, rank, n))
		}
	}
	i, _ := slices.BinarySearchFunc(r.specs, rank, func(o S, rank int) int { _, k := o.Ident(); return k - rank })
	r.specs = slices.Insert(r.specs, i, s)
}

// All lists the entries in rank order.
func (r *Registry[S]) All() []S { return slices.Clone(r.specs) }

// Names lists the entries' names in rank order.
func (r *Registry[S]) Names() []string {
	out := make([]string, len(r.specs))
	for i, s := range r.specs {
		out[i], _ = s.Ident()
	}
	return out
}

// Lookup returns the entry named name.
func (r *Registry[S]) Lookup(name string) (S, bool) {
	for _, s := range r.specs {
		if n, _ := s.Ident(); n == name {
			return s, true
		}
	}
	var zero S
	return zero, false
}
