//go:build linux

package bucket

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash test re-runs this test binary as a child that writes buckets
// in a loop, kills it with SIGKILL mid-write, and checks what a reopen
// keeps. SIGKILL loses nothing the kernel has accepted, so this tests the
// store's own ordering (data, fdatasync, metadata, rename), not power loss.

const crashEnv = "KVSIM_BUCKET_CRASH_DIR"

func crashOpts(dir string) StoreOptions {
	o := DefaultStoreOptions(dir)
	o.BucketBytes = 512 << 10
	o.MaxKeys = 64
	o.WriteBuffer = 128 << 10
	return o
}

const crashMaxSize = 40000

// crashDeleted: when key k is put, key k-3 is deleted if k%7 == 0.
func crashDeleted(j, base uint64) bool { return j+3 >= base+3 && (j+3)%7 == 0 }

// TestBucketCrashChild is the child: it runs only under TestBucketCrash.
func TestBucketCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("child of TestBucketCrash only")
	}
	base, _ := strconv.ParseUint(os.Getenv(crashEnv+"_BASE"), 10, 64)
	s, _, err := Open(crashOpts(dir))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for k := base; ; k++ {
		if err := s.Put(k, bucketPayload(k, bucketSize(k, crashMaxSize))); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if k%7 == 0 && k >= base+3 {
			s.Delete(k - 3)
		}
		if (k-base)%40 == 39 {
			if err := s.Flush(); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Fprintf(out, "durable %d\n", k)
			out.Flush()
		}
	}
}

func TestBucketCrash(t *testing.T) {
	bucketFDCheck(t)
	dir := bucketTestDir(t)
	present := map[uint64]bool{} // keys proven durable and not deleted, from earlier rounds
	torn := 0
	// A kill that lands in the directory fsync after a rename leaves only
	// complete buckets; run rounds until some did tear.
	rounds := 0
	for round := 0; round < 12 && (round < 4 || torn < 2); round++ {
		rounds++
		base := uint64(round+1) * 1_000_000
		cmd := exec.Command(os.Args[0], "-test.run=^TestBucketCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir, fmt.Sprintf("%s_BASE=%d", crashEnv, base))
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		cmd.Stderr = os.Stderr
		must(t, cmd.Start())
		sc := bufio.NewScanner(stdout)
		durable, lines := uint64(0), 0
		deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		for lines < 3+round && sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "durable "); ok {
				durable, _ = strconv.ParseUint(v, 10, 64)
				lines++
			} else {
				t.Logf("child: %s", line)
			}
		}
		deadline.Stop()
		if lines < 3+round {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child stopped after %d flushes", round, lines)
		}
		// Let it run into the next bucket, then kill it mid-write.
		time.Sleep(time.Duration(rand.IntN(8000)) * time.Microsecond)
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		go func() {
			for sc.Scan() {
			}
		}()
		cmd.Wait()

		// What a reopen must discard: data files without metadata.
		data, meta := crashFiles(t, dir)
		var want []string
		for _, id := range data {
			if !slices.Contains(meta, id) {
				want = append(want, bucketFileName(id, ""))
			}
		}
		s, rep, err := Open(crashOpts(dir))
		must(t, err)
		var got []string
		for _, d := range rep.DiscardedBuckets {
			got = append(got, strings.SplitN(d, ":", 2)[0])
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			s.Close()
			t.Fatalf("round %d: discarded %q, want %q", round, rep.DiscardedBuckets, want)
		}
		torn += len(want)
		t.Logf("round %d: killed after key %d was durable; reopen found %d buckets, %d blocks, discarded %q",
			round, durable, rep.Buckets, rep.Blocks, rep.DiscardedBuckets)

		// Every served block is intact.
		dst := make([]byte, crashMaxSize)
		for _, k := range s.Keys() {
			n, err := s.Get(k, dst)
			if err != nil || n != bucketSize(k, crashMaxSize) || !bytesEqualPayload(k, dst[:n]) {
				s.Close()
				t.Fatalf("round %d: key %d: n=%d err=%v", round, k, n, err)
			}
		}
		// Everything flushed before the kill is there, deletions included.
		// (The child may have flushed again after the last line read: a
		// key deleted after that may be there or not.)
		for k := base; k <= durable; k++ {
			deleted := crashDeleted(k, base) && k+3 <= durable
			if crashDeleted(k, base) && !deleted {
				continue
			}
			if s.Has(k) == deleted {
				s.Close()
				t.Fatalf("round %d: key %d present=%v, deleted before the flush=%v", round, k, s.Has(k), deleted)
			}
			if !deleted {
				present[k] = true
			}
		}
		for k := range present {
			if !s.Has(k) {
				s.Close()
				t.Fatalf("round %d: key %d from an earlier round is gone", round, k)
			}
		}
		must(t, s.Close())
	}
	if torn == 0 {
		t.Errorf("in %d rounds no kill landed inside a bucket write; nothing torn to discard", rounds)
	}
}

func crashFiles(t *testing.T, dir string) (data, meta []uint64) {
	des, err := os.ReadDir(dir)
	must(t, err)
	for _, de := range des {
		id, ext, ok := parseBucketName(de.Name())
		switch {
		case !ok:
		case ext == bucketDataExt:
			data = append(data, id)
		case ext == bucketMetaExt:
			meta = append(meta, id)
		}
	}
	return data, meta
}

func bytesEqualPayload(key uint64, b []byte) bool {
	return slices.Equal(b, bucketPayload(key, len(b)))
}

// The promise harness: a child runs a scripted mix of puts, overwrites,
// deletes, flushes and (through a small capacity) evictions, announcing
// each step on stdout before it happens, and is killed at a random step.
// The parent reopens the store and checks, key by key, that what it
// serves is a state the key was in at or after the last point that state
// was made durable: the last Flush, or the seal of the bucket holding the
// key's newest sealed version. So a key flushed and not touched since has
// exactly its flushed bytes, no key comes back with a superseded version,
// and nothing unverified is served. More rounds: -crash-rounds N.

var crashRounds = flag.Int("crash-rounds", 0, "rounds of TestBucketCrashPromise (default 24)")

const (
	promiseEnv     = "KVSIM_BUCKET_PROMISE_DIR"
	promiseKeys    = 40
	promiseOps     = 240
	promiseMaxSize = 12000
)

// promiseOpts: even rounds evict LRU, which takes newer buckets first.
func promiseOpts(dir string, round int) StoreOptions {
	o := DefaultStoreOptions(dir)
	if round%2 == 0 {
		o.Evict = "lru"
	}
	o.BucketBytes = 64 << 10
	o.MaxKeys = 4
	o.WriteBuffer = 16 << 10
	o.Capacity = 512 << 10
	return o
}

// promiseBlock is version ver of key's block.
func promiseBlock(key, ver uint64) []byte {
	v := key<<40 | ver
	return bucketPayload(v, 1+int(v*0x9e3779b97f4a7c15>>40)%promiseMaxSize)
}

// promiseStep is step i of round's script: 'p' put, 'd' delete, 'f' flush.
func promiseStep(r *rand.Rand) (op byte, key uint64) {
	key = uint64(r.IntN(promiseKeys))
	switch x := r.IntN(100); {
	case x < 72:
		return 'p', key
	case x < 94:
		return 'd', key
	}
	return 'f', 0
}

// TestBucketCrashPromiseChild is the child: it runs only under
// TestBucketCrashPromise.
func TestBucketCrashPromiseChild(t *testing.T) {
	dir := os.Getenv(promiseEnv)
	if dir == "" {
		t.Skip("child of TestBucketCrashPromise only")
	}
	round, _ := strconv.ParseUint(os.Getenv(promiseEnv+"_ROUND"), 10, 64)
	say := func(format string, a ...any) { fmt.Fprintf(os.Stdout, format+"\n", a...) } // unbuffered: each line is in the pipe before the next step
	s, _, err := Open(promiseOpts(dir, int(round)))
	if err != nil {
		say("error %v", err)
		os.Exit(2)
	}
	keyList := func(tag string, keys []uint64) {
		var b strings.Builder
		b.WriteString(tag)
		for _, k := range keys {
			fmt.Fprintf(&b, " %d", k)
		}
		say("%s", b.String())
	}
	s.testSealed = func(keys []uint64) {
		// Each key with the CRC of the copy sealed: the version it is.
		var b strings.Builder
		b.WriteString("s")
		for _, k := range keys {
			loc := s.index[k]
			fmt.Fprintf(&b, " %d:%d", k, loc.b.ents[loc.i].crc)
		}
		say("%s", b.String())
	}
	s.testEvicting = func(keys []uint64) { keyList("e", keys) }
	r := rand.New(rand.NewPCG(round, 77))
	for i := range uint64(promiseOps) {
		op, key := promiseStep(r)
		switch op {
		case 'p':
			ver := round<<16 | i
			say("p %d %d", key, ver)
			if err := s.Put(key, promiseBlock(key, ver)); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
		case 'd':
			say("d %d", key)
			s.Delete(key)
		case 'f':
			say("flush")
			if err := s.Flush(); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("f")
		}
		s.Evicted()
	}
	say("done")
	os.Exit(0) // no Close: a quiet crash
}

// promiseHist is one key's states, in the order of the child's lines.
type promiseHist struct {
	t   []int    // line number at which the state began
	ver []uint64 // 0: absent
}

func (h *promiseHist) set(t int, ver uint64) {
	h.t = append(h.t, t)
	h.ver = append(h.ver, ver)
}

// allowed are the states in effect at some line >= from.
func (h *promiseHist) allowed(from int) []uint64 {
	var out []uint64
	for i := range h.t {
		if i+1 == len(h.t) || h.t[i+1] > from {
			out = append(out, h.ver[i])
		}
	}
	return out
}

func TestBucketCrashPromise(t *testing.T) {
	bucketFDCheck(t)
	rounds := 24
	if *crashRounds > 0 {
		rounds = *crashRounds
	}
	dir := bucketTestDir(t)
	state := map[uint64]uint64{} // the state found by the last check (0: absent)
	kills, violations, steps := 0, 0, 0
	mix := map[string]int{} // lines by kind
	var report []string
	violate := func(format string, a ...any) {
		violations++
		if len(report) < 20 {
			report = append(report, fmt.Sprintf(format, a...))
		}
	}
	for round := 1; round <= rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBucketCrashPromiseChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), promiseEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", promiseEnv, round))
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		cmd.Stderr = os.Stderr
		must(t, cmd.Start())
		killAt := 1 + rand.IntN(promiseOps)
		deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
		var lines []string
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		ops, killed := 0, false
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if line[0] == 'p' || line[0] == 'd' || line == "flush" {
				ops++
			}
			if ops == killAt && !killed {
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		cmd.Wait()
		deadline.Stop()
		if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], "error") {
			t.Fatalf("round %d: child: %s", round, lines[n-1])
		}
		if len(lines) == 0 || lines[len(lines)-1] != "done" {
			kills++
		}
		steps += ops

		// Replay the lines into each key's history.
		hist := map[uint64]*promiseHist{}
		from := map[uint64]int{} // per key: the line from which states count
		for k := range uint64(promiseKeys) {
			hist[k] = &promiseHist{}
			hist[k].set(-1, state[k])
			from[k] = -1
		}
		flushed := -1
		for n, line := range lines {
			f := strings.Fields(line)
			mix[f[0]]++
			num := func(s string) uint64 { v, _ := strconv.ParseUint(s, 10, 64); return v }
			switch f[0] {
			case "p":
				hist[num(f[1])].set(n, num(f[2]))
			case "d":
				hist[num(f[1])].set(n, 0)
			case "e":
				for _, k := range f[1:] {
					hist[num(k)].set(n, 0)
				}
			case "f":
				flushed = n
			case "s":
				for _, kc := range f[1:] {
					ks, cs, _ := strings.Cut(kc, ":")
					k, crc := num(ks), uint32(num(cs))
					h := hist[k]
					for i := len(h.t) - 1; i >= 0; i-- {
						if v := h.ver[i]; v != 0 && bucketChecksum(promiseBlock(k, v)) == crc {
							from[k] = max(from[k], h.t[i])
							break
						}
					}
				}
			}
		}

		s, rep, err := Open(promiseOpts(dir, round))
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		if len(rep.DamagedBuckets)+len(rep.Quarantined) > 0 {
			violate("round %d: a crash left damage: %+v", round, rep)
		}
		dst := make([]byte, promiseMaxSize)
		for k := range uint64(promiseKeys) {
			ok := hist[k].allowed(max(flushed, from[k]))
			n, err := s.Get(k, dst)
			got := uint64(0)
			switch {
			case errors.Is(err, ErrBucketNotFound):
			case err != nil:
				violate("round %d: key %d: %v", round, k, err)
				continue
			default:
				for _, v := range hist[k].ver {
					if v != 0 && slices.Equal(dst[:n], promiseBlock(k, v)) {
						got = v
					}
				}
				if got == 0 {
					violate("round %d: key %d: %d bytes that are no version of it", round, k, n)
					continue
				}
			}
			if !slices.Contains(ok, got) {
				what := "a superseded version"
				if got == 0 {
					what = "absent"
				}
				violate("round %d: key %d is %s (version %#x); allowed %#x (history %v at lines %v, last flush at line %d)",
					round, k, what, got, ok, hist[k].ver, hist[k].t, flushed)
			}
			state[k] = got
		}
		if len(s.Keys()) != func() int {
			c := 0
			for _, v := range state {
				if v != 0 {
					c++
				}
			}
			return c
		}() {
			violate("round %d: keys outside the script are served: %v", round, s.Keys())
		}
		must(t, s.Close())
	}
	t.Logf("crash promise: %d rounds, %d kills, %d steps (%d puts, %d deletes, %d flushes; %d seals, %d evictions), %d violations",
		rounds, kills, steps, mix["p"], mix["d"], mix["flush"], mix["s"], mix["e"], violations)
	for _, r := range report {
		t.Error(r)
	}
}
