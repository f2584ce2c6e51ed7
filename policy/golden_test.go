package policy

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kvsim/internal/golden"
)

// Golden scripts under testdata/ pin down each policy's behaviour on small,
// hand-checked cases. One command per line, '#' starts a comment:
//
//	new NAME cap=N [key=value...]  start a cache of N size units (params go to the policy)
//	access x y:3 ...               reference blocks (":3" = size 3, default 1): a hit
//	                               calls Access, a miss evicts while it does not fit, then Insert
//	                               (a Batcher's batch is drained after each Evict, and one
//	                               batch is evicted after an Insert that leaves it Overfull,
//	                               sparing the block inserted)
//	at T | at                      use now = T for what follows | back to now = access number
//	pin x ... | unpin x ...        the caller marks blocks in use
//	remove x ...                   the caller drops resident blocks
//	evict                          one explicit Evict (a failed one records victim "none")
//	expect hits=N victims=a,b|-    hits and victims since the previous expect
//	resident x y ...               the exact resident set (and Len)
//	idle T x y ...                 mark blocks idle, their session back at T (Idler)
//	busy x ...                     their session is back (Idler.Busy)
//
// "new idle:NAME" runs NAME wrapped by IdleRank.
//
// Belady's future is the section's own access sequence, with now = the
// access number (0-based).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scripts: %v", err)
	}
	covered := map[string]bool{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			for _, name := range runScript(t, f) {
				covered[name] = true
			}
		})
	}
	for _, n := range Names() {
		if !covered[n] {
			t.Errorf("policy %q has no golden script", n)
		}
	}
}

type gline struct {
	no    int
	words []string
}

// scriptFuture answers next uses from a section's access sequence.
type scriptFuture []Block

func (f scriptFuture) NextUse(b Block, now int64) int64 {
	for i := now + 1; i < int64(len(f)); i++ {
		if f[i] == b {
			return i
		}
	}
	return math.MaxInt64
}

type pinSet map[Block]bool

func (p pinSet) Pinned(b Block) bool { return p[b] }

// runScript runs one file and returns the policies it exercised. The file
// is golden: its expect and resident lines are compared as text with what
// the policy did (golden.Check), so go test ./policy -update rewrites
// them and keeps everything else.
func runScript(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw := strings.Split(string(data), "\n")
	var sections [][]gline
	for i, line := range raw {
		text, _, _ := strings.Cut(line, "#")
		w := strings.Fields(text)
		if len(w) == 0 {
			continue
		}
		if w[0] == "new" || len(sections) == 0 {
			sections = append(sections, nil)
		}
		sections[len(sections)-1] = append(sections[len(sections)-1], gline{i + 1, w})
	}
	var names []string
	actual := map[int]string{} // line number -> what the line should say
	for _, sec := range sections {
		names = append(names, runSection(t, path, sec, actual))
	}
	for no, cmd := range actual {
		raw[no-1] = replaceCommand(raw[no-1], cmd)
	}
	golden.Check(t, path, []byte(strings.Join(raw, "\n")))
	return names
}

// replaceCommand puts cmd in place of line's command, keeping its
// indentation and its comment in the same column where there is room.
func replaceCommand(line, cmd string) string {
	indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
	pre, comment, ok := strings.Cut(line, "#")
	if !ok {
		return indent + cmd
	}
	out := indent + cmd
	if len(out) < len(pre) {
		return out + strings.Repeat(" ", len(pre)-len(out)) + "#" + comment
	}
	return out + " #" + comment
}

func runSection(t *testing.T, path string, sec []gline, actual map[int]string) string {
	fail := func(l gline, format string, args ...any) {
		t.Helper()
		t.Fatalf("%s:%d: %s: %s", path, l.no, strings.Join(l.words, " "), fmt.Sprintf(format, args...))
	}
	if sec[0].words[0] != "new" || len(sec[0].words) < 3 {
		fail(sec[0], "a section starts with: new NAME cap=N")
	}
	ids := map[string]Block{}
	var names []string
	id := func(s string) Block {
		if b, ok := ids[s]; ok {
			return b
		}
		ids[s] = Block(len(names))
		names = append(names, s)
		return ids[s]
	}
	parseBlock := func(l gline, s string) (Block, int64) {
		name, sz, ok := strings.Cut(s, ":")
		size := int64(1)
		if ok {
			v, err := strconv.ParseInt(sz, 10, 64)
			if err != nil || v <= 0 {
				fail(l, "bad size in %q", s)
			}
			size = v
		}
		return id(name), size
	}
	// Belady's future: every access of the section, in order.
	var fut scriptFuture
	for _, l := range sec {
		if l.words[0] == "access" {
			for _, s := range l.words[1:] {
				b, _ := parseBlock(l, s)
				fut = append(fut, b)
			}
		}
	}

	head := sec[0]
	name := head.words[1]
	cfg := Config{Params: Params{}, Future: fut}
	for _, kv := range head.words[2:] {
		k, v, ok := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			fail(head, "want key=number, got %q", kv)
		}
		if k == "cap" {
			cfg.Capacity = int64(x)
		} else {
			cfg.Params[k] = x
		}
	}
	base, wrap := strings.CutPrefix(name, "idle:")
	p, err := New(base, cfg)
	if err == nil && wrap {
		p, err = IdleRank(p)
	}
	if err != nil {
		fail(head, "%v", err)
	}

	resident := map[Block]int64{}
	var used int64
	pins := pinSet{}
	hits, acc := 0, int64(0)
	var victims []string
	fixed, now := false, int64(0)
	batcher, _ := p.(Batcher)
	var evict func(l gline) bool
	evict = func(l gline) bool {
		v, ok := p.Evict(now, pins)
		if !ok {
			victims = append(victims, "none")
			return false
		}
		defer func() { // as the core does: the rest of the batch goes too
			for batcher != nil && batcher.Pending() && evict(l) {
			}
		}()
		sz, res := resident[v]
		if !res {
			fail(l, "victim %d is not resident", v)
		}
		if pins[v] {
			fail(l, "victim %s is pinned", names[v])
		}
		delete(resident, v)
		used -= sz
		victims = append(victims, names[v])
		return true
	}
	for _, l := range sec[1:] {
		args := l.words[1:]
		switch l.words[0] {
		case "access":
			for _, s := range args {
				b, size := parseBlock(l, s)
				if !fixed {
					now = acc
				}
				acc++
				if _, ok := resident[b]; ok {
					hits++
					p.Access(b, now)
					continue
				}
				for used+size > cfg.Capacity {
					if !evict(l) {
						fail(l, "no room for %s", s)
					}
				}
				p.Insert(b, size, now)
				resident[b] = size
				used += size
				if batcher != nil && batcher.Overfull(used, cfg.Capacity) {
					was := pins[b] // the core spares the block just put
					pins[b] = true
					if !evict(l) { // ahead of need: nothing to take is no failure
						victims = victims[:len(victims)-1]
					}
					pins[b] = was
				}
			}
		case "at":
			fixed = len(args) > 0
			if fixed {
				v, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil {
					fail(l, "bad time")
				}
				now = v
			}
		case "pin", "unpin":
			for _, s := range args {
				pins[id(s)] = l.words[0] == "pin"
			}
		case "remove":
			for _, s := range args {
				b := id(s)
				sz, ok := resident[b]
				if !ok {
					fail(l, "%s is not resident", s)
				}
				p.Remove(b)
				delete(resident, b)
				used -= sz
			}
		case "evict":
			evict(l)
		case "idle":
			idler, ok := p.(Idler)
			if !ok || len(args) < 1 {
				fail(l, "want idle T blocks... on an idle: policy")
			}
			back, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				fail(l, "bad time")
			}
			for _, s := range args[1:] {
				idler.Idle(id(s), back)
			}
		case "busy":
			idler, ok := p.(Idler)
			if !ok {
				fail(l, "busy needs an idle: policy")
			}
			for _, s := range args {
				idler.Busy(id(s))
			}
		case "expect":
			// What happened, in the line's own terms; a difference shows
			// in the file's diff.
			got := []string{"expect"}
			for _, kv := range args {
				k, _, _ := strings.Cut(kv, "=")
				switch k {
				case "hits":
					got = append(got, "hits="+strconv.Itoa(hits))
				case "victims":
					v := strings.Join(victims, ",")
					if len(victims) == 0 {
						v = "-"
					}
					got = append(got, "victims="+v)
				default:
					fail(l, "unknown expectation %q", k)
				}
			}
			if !slices.Equal(got, l.words) {
				actual[l.no] = strings.Join(got, " ")
			}
			hits, victims = 0, nil
		case "resident":
			var got, want []string
			for b := range resident {
				got = append(got, names[b])
			}
			want = append(want, args...)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				actual[l.no] = strings.Join(append([]string{"resident"}, got...), " ")
			}
			if p.Len() != len(resident) {
				fail(l, "Len() = %d with %d resident", p.Len(), len(resident))
			}
		default:
			fail(l, "unknown command")
		}
	}
	return name
}
