package scenario

// Link connects two tiers; data moves both ways.
type Link struct {
	From, To         int     // indices into Scenario.Tiers
	Bandwidth        float64 `key:"bandwidth"`         // bytes/s, From -> To
	ReverseBandwidth float64 `key:"reverse_bandwidth"` // bytes/s, To -> From
	Latency          int64   `key:"latency"`           // ns, From -> To
	ReverseLatency   int64   `key:"reverse_latency"`   // ns, To -> From
	Lanes            int     `key:"lanes"`             // transfers in flight, hiding latency
}

// PageableBandwidth is the default hbm<->dram link rate: a D2H copy from
// pageable host memory (background section 1: ~1 GB/s vs ~25 GB/s pinned).
const PageableBandwidth = 1e9

// DefaultLink is the link Parse fills in between tiers a and b: the slower
// tier's bandwidth (PageableBandwidth between hbm and dram) and the larger
// latency, both ways, one lane.
func DefaultLink(tiers []Tier, a, b int) Link {
	ta, tb := tiers[a], tiers[b]
	bw := min(ta.Bandwidth, tb.Bandwidth)
	if pair(ta.Kind, tb.Kind, "hbm", "dram") {
		bw = PageableBandwidth
	}
	lat := max(ta.Latency, tb.Latency)
	return Link{From: a, To: b, Bandwidth: bw, ReverseBandwidth: bw, Latency: lat, ReverseLatency: lat, Lanes: 1}
}

func pair(a, b, x, y string) bool { return a == x && b == y || a == y && b == x }

func (p *parser) parseLinks(ts []*table, given bool, tiers []Tier) ([]Link, error) {
	if !given {
		// No [[link]]: a chain in file order, hbm -> next -> next.
		links := make([]Link, 0, len(tiers)-1)
		for i := 1; i < len(tiers); i++ {
			l := DefaultLink(tiers, i-1, i)
			p.profile.applyDefault(&l, tiers)
			links = append(links, l)
		}
		return links, nil
	}
	index := map[string]int{}
	for i, t := range tiers {
		index[t.Name] = i
	}
	seen := map[[2]int]int{}
	out := make([]Link, 0, len(ts))
	for n, t := range ts {
		var ends [2]int
		for e, key := range []string{"from", "to"} {
			name, err := t.str(key)
			if err != nil {
				return nil, err
			}
			i, ok := index[name]
			if !ok {
				return nil, t.errf(key, "unknown tier %q", name)
			}
			ends[e] = i
		}
		a, b := ends[0], ends[1]
		if a == b {
			return nil, t.errf("to", "same tier as from (%q)", tiers[a].Name)
		}
		k := [2]int{min(a, b), max(a, b)}
		if j, dup := seen[k]; dup {
			return nil, t.errf("to", "%q and %q are already linked by link %d", tiers[a].Name, tiers[b].Name, j+1)
		}
		seen[k] = n
		l := DefaultLink(tiers, a, b)
		p.profile.applyDefault(&l, tiers)
		d := l
		err := t.bind(&l, func(key string) (any, error) {
			_, latency := t.m["latency"]
			switch {
			case key == "reverse_bandwidth":
				return l.Bandwidth, nil
			case key == "reverse_latency" && latency:
				return l.Latency, nil
			case key == "lanes":
				return nil, nil // the declared one, whatever a profile says
			}
			return presetDefault(&d, key), nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// reachable checks that links connect every tier to the hbm tier.
func (p *parser) reachable(ts []*table, tiers []Tier, links []Link) error {
	adj := make([][]int, len(tiers))
	for _, l := range links {
		adj[l.From] = append(adj[l.From], l.To)
		adj[l.To] = append(adj[l.To], l.From)
	}
	seen := make([]bool, len(tiers))
	seen[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range adj[i] {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return ts[i].errf("", "not reachable from %q through [[link]]s", tiers[0].Name)
		}
	}
	return nil
}
