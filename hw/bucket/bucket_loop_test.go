//go:build linux

package bucket

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"kvsim/internal/testenv"
)

// skipOrFail skips with why, or fails when KVSIM_REQUIRE_ALL says that
// every test must really run.
var skipOrFail = testenv.Missing

// smallExt4 mounts a fresh ext4 filesystem of size bytes (a loop-mounted
// image) and returns its mount point; it needs root.
func smallExt4(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "loop-mounted ext4 needs root")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		skipOrFail(t, "no mkfs.ext4: %v", err)
	}
	work := bucketTestDir(t)
	img := filepath.Join(work, "fs.img")
	mnt := filepath.Join(work, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	must(t, os.WriteFile(img, nil, 0o644))
	must(t, os.Truncate(img, size))
	if out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		skipOrFail(t, "mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		// A machine (or container) without loop devices cannot do this at
		// all, like one without a GPU: the injected-fault tests still cover
		// ENOSPC there.
		t.Skipf("this machine allows no loop mount (the fault-injection tests cover ENOSPC): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// TestBucketLoopENOSPC fills a real 24 MiB ext4 filesystem: the write that
// runs out of space fails its Put with ENOSPC, that bucket's blocks are
// dropped, every earlier bucket stays readable (also after reopening), and
// freeing buckets lets writes succeed again.
func TestBucketLoopENOSPC(t *testing.T) {
	mnt := smallExt4(t, 24<<20)
	bucketFDCheck(t)
	dir := filepath.Join(mnt, "store")
	o := DefaultStoreOptions(dir)
	o.BucketBytes = 1 << 20
	o.MaxKeys = 64
	s, rep, err := Open(o)
	must(t, err)
	defer s.Close()
	if !rep.Direct {
		t.Errorf("no O_DIRECT on loop ext4: %s", rep.DirectNote)
	}
	const size = 100_000
	var failed error
	var last uint64
	for k := uint64(0); k < 1000; k++ {
		if failed = s.Put(k, bucketPayload(k, size)); failed != nil {
			last = k
			break
		}
	}
	if failed == nil {
		t.Fatal("24 MiB filesystem never filled")
	}
	if !errors.Is(failed, unix.ENOSPC) {
		t.Fatalf("got %v, want ENOSPC", failed)
	}
	t.Logf("full after %d puts: %v", last, failed)
	lost := s.Evicted()
	st := s.Stats()
	if st.FailedBuckets != 1 || len(lost) == 0 || st.LostBlocks != int64(len(lost)) {
		t.Fatalf("lost %d, stats %+v", len(lost), st)
	}
	for _, k := range lost {
		if s.Has(k) {
			t.Fatalf("lost key %d still served", k)
		}
	}
	keys := s.Keys()
	for _, k := range keys {
		checkBlock(t, s, k, size)
	}
	// A second attempt on a full disk fails cleanly too.
	var again error
	for k := uint64(5000); k < 5100 && again == nil; k++ {
		again = s.Put(k, bucketPayload(k, size))
	}
	if again == nil {
		again = s.Flush()
	}
	if !errors.Is(again, unix.ENOSPC) {
		t.Fatalf("second fill: %v", again)
	}
	s.Evicted()
	must(t, s.Close())

	s2, rep := openBucketTest(t, o)
	if len(rep.DiscardedBuckets) != 0 || rep.Blocks != len(keys) {
		t.Fatalf("reopen after ENOSPC: %+v, want %d blocks", rep, len(keys))
	}
	for _, k := range keys {
		checkBlock(t, s2, k, size)
	}
	// Free the first half (whole buckets go) and write again.
	for _, k := range keys {
		if k < last/2 {
			s2.Delete(k)
		}
	}
	for k := uint64(10000); k < 10000+last/4; k++ {
		must(t, s2.Put(k, bucketPayload(k, size)))
	}
	must(t, s2.Flush())
	checkBlock(t, s2, 10000, size)
	must(t, s2.Close())
}
