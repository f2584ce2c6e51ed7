//go:build linux

package hw

import (
	"bufio"
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
	s, _, err := OpenBucketStore(crashOpts(dir))
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
		s, rep, err := OpenBucketStore(crashOpts(dir))
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
