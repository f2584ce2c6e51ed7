//go:build linux

package hw

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/hw/ioengine"
	"kvsim/hw/payload"
	"kvsim/hw/store"
)

// tierTestDir is a fresh folder on a disk filesystem (O_DIRECT works).
func tierTestDir(t *testing.T) string {
	t.Helper()
	if fs, err := ioengine.FSType(os.TempDir()); err == nil && fs != "tmpfs" && fs != "ramfs" {
		return t.TempDir()
	}
	parent, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(parent, ".kvsim-tiers-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

var testIdentity = []StoreField{{Key: "--block-bytes", Value: "4096"}, {Key: "trace sha256", Value: "aa"}}

func openSSD(dir string, fresh bool, id []StoreField) (*Stores, error) {
	return OpenStores([]TierSpec{{Name: "ssd", Kind: "ssd", Capacity: 1 << 30}},
		TierOptions{Dir: dir, SlotBytes: 4096, Engine: "pread", Fresh: fresh, Identity: id})
}

func putBlocks(t *testing.T, s store.Store, n int) {
	t.Helper()
	buf := make([]byte, 4096)
	for k := range int32(n) {
		payload.Fill(buf, k)
		if err := s.Put(k, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot maps every file under dir to its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStoreFolderNotOurs: a tier folder kvsim did not make (no marker) is
// refused with its name, whatever --fresh says, and nothing in it or
// beside it is touched; so is a file where the folder would be.
func TestStoreFolderNotOurs(t *testing.T) {
	dir := tierTestDir(t)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	tier := filepath.Join(dir, "tier-ssd")
	os.Mkdir(tier, 0o755)
	os.WriteFile(filepath.Join(tier, "data.bin"), []byte("also mine"), 0o644)
	os.WriteFile(filepath.Join(tier, "0000000000000001.meta"), []byte("looks like a bucket"), 0o644)
	before := snapshot(t, dir)
	for _, fresh := range []bool{false, true} {
		ss, err := openSSD(dir, fresh, testIdentity)
		if err == nil {
			ss.Close()
			t.Fatalf("fresh=%v: a folder without the marker was used", fresh)
		}
		if !strings.Contains(err.Error(), tier) || !strings.Contains(err.Error(), "not made by kvsim") {
			t.Errorf("fresh=%v: %v", fresh, err)
		}
	}
	if after := snapshot(t, dir); len(after) != len(before) {
		t.Errorf("files changed: %v -> %v", before, after)
	} else {
		for p, b := range before {
			if after[p] != b {
				t.Errorf("%s changed", p)
			}
		}
	}
	// A file where the store's folder would be.
	dir2 := tierTestDir(t)
	os.WriteFile(filepath.Join(dir2, "tier-ssd"), []byte("a file"), 0o644)
	if ss, err := openSSD(dir2, true, testIdentity); err == nil || !strings.Contains(err.Error(), "not a folder") {
		if ss != nil {
			ss.Close()
		}
		t.Errorf("a file in the folder's place: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir2, "tier-ssd")); string(b) != "a file" {
		t.Error("the file was replaced")
	}
	// An empty folder is adopted, and marked.
	dir3 := tierTestDir(t)
	os.Mkdir(filepath.Join(dir3, "tier-ssd"), 0o755)
	ss, err := openSSD(dir3, false, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	ss.Close()
	if _, err := os.Stat(filepath.Join(dir3, "tier-ssd", StoreMarker)); err != nil {
		t.Error(err)
	}
}

// TestStoreLockedFirst: a second open of a store in use fails at once,
// --fresh or not, and deletes nothing of the live store.
func TestStoreLockedFirst(t *testing.T) {
	dir := tierTestDir(t)
	a, err := openSSD(dir, false, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	putBlocks(t, a.List[0], 40)
	if err := a.List[0].(*bucketTier).Flush(); err != nil {
		t.Fatal(err)
	}
	for _, fresh := range []bool{true, false} {
		b, err := openSSD(dir, fresh, testIdentity)
		if err == nil {
			b.Close()
			t.Fatalf("fresh=%v: a second open of a live store succeeded", fresh)
		}
		if !strings.Contains(err.Error(), "in use by another process") || !strings.Contains(err.Error(), filepath.Join(dir, "tier-ssd")) {
			t.Errorf("fresh=%v: %v", fresh, err)
		}
	}
	for k := range int32(40) {
		if !a.List[0].Has(k) {
			t.Fatalf("block %d gone from the live store", k)
		}
	}
	a.Close()
	c, err := openSSD(dir, false, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if op := c.Opened[0]; op.State != "reopened" || op.Blocks != 40 {
		t.Errorf("after the refused opens: %+v", op)
	}
}

// TestStoreReopen: a store reopens with what it held; another identity is
// refused (naming what differs) and leaves it be; Fresh empties it and
// takes the new identity; a damaged marker needs Fresh.
func TestStoreReopen(t *testing.T) {
	dir := tierTestDir(t)
	ss, err := openSSD(dir, false, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if op := ss.Opened[0]; op.State != "new" || op.Blocks != 0 {
		t.Errorf("first open: %+v", op)
	}
	putBlocks(t, ss.List[0], 25)
	ss.Close()

	ss, err = openSSD(dir, false, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	op := ss.Opened[0]
	keys, sizes := ss.List[0].(store.Recoverer).Blocks()
	if op.State != "reopened" || op.Blocks != 25 || len(keys) != 25 || keys[0] != 0 || keys[24] != 24 || sizes[3] != 4096 {
		t.Errorf("reopen: %+v, keys %v", op, keys)
	}
	buf := make([]byte, 4096)
	if n, err := ss.List[0].Get(7, buf); err != nil || n != 4096 || !payload.Verify(buf, 7) {
		t.Errorf("block 7 after reopen: %d, %v", n, err)
	}
	ss.Close()

	other := []StoreField{{Key: "--block-bytes", Value: "8192"}, {Key: "trace sha256", Value: "aa"}}
	if ss, err := openSSD(dir, false, other); err == nil {
		ss.Close()
		t.Fatal("a store written with other block bytes was reopened")
	} else if !strings.Contains(err.Error(), "--block-bytes 4096 (this replay: 8192)") || !strings.Contains(err.Error(), "--fresh") {
		t.Errorf("identity mismatch: %v", err)
	}
	ss, err = openSSD(dir, true, other)
	if err != nil {
		t.Fatal(err)
	}
	if op := ss.Opened[0]; op.State != "emptied" || op.Blocks != 25 {
		t.Errorf("fresh: %+v", op)
	}
	if keys, _ := ss.List[0].(store.Recoverer).Blocks(); len(keys) != 0 {
		t.Errorf("fresh left %d blocks", len(keys))
	}
	ss.Close()
	ss, err = openSSD(dir, false, other) // the new identity was recorded
	if err != nil {
		t.Fatal(err)
	}
	ss.Close()

	os.WriteFile(filepath.Join(dir, "tier-ssd", StoreMarker), []byte("{garbage"), 0o644)
	if ss, err := openSSD(dir, false, other); err == nil {
		ss.Close()
		t.Error("a damaged marker was trusted")
	} else if !strings.Contains(err.Error(), "--fresh") {
		t.Errorf("damaged marker: %v", err)
	}
	if ss, err = openSSD(dir, true, other); err != nil {
		t.Fatalf("--fresh over a damaged marker: %v", err)
	}
	ss.Close()
}

// TestStoreScratch: without an identity (kvsim calibrate) a store is
// emptied on open, and a store such a run left is emptied by a replay
// rather than refused: its blocks mean nothing to it.
func TestStoreScratch(t *testing.T) {
	dir := tierTestDir(t)
	for i, id := range [][]StoreField{nil, nil, testIdentity} {
		ss, err := openSSD(dir, false, id)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if keys, _ := ss.List[0].(store.Recoverer).Blocks(); len(keys) != 0 {
			t.Errorf("open %d: %d blocks of a scratch store kept", i, len(keys))
		}
		if want := []string{"new", "emptied", "emptied"}[i]; ss.Opened[0].State != want {
			t.Errorf("open %d: %+v, want %s", i, ss.Opened[0], want)
		}
		putBlocks(t, ss.List[0], 10)
		ss.Close()
	}
	ss, err := openSSD(dir, false, testIdentity)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if op := ss.Opened[0]; op.State != "reopened" || op.Blocks != 10 {
		t.Errorf("after the replay's run: %+v", op)
	}
}

// TestFitsMemory: tiers kept in host memory that would take more than the
// machine has available are refused before any is made, naming them; a
// disk tier, a remote store and HBM on a real GPU do not count.
func TestFitsMemory(t *testing.T) {
	tiers := []TierSpec{{Name: "hbm", Kind: "hbm", Capacity: 4 << 30}, {Name: "dram", Kind: "dram", Capacity: 8 << 30},
		{Name: "ssd", Kind: "ssd", Capacity: 1 << 50}, {Name: "far", Kind: "remote_dram", Capacity: 1 << 50, Endpoint: "redis://h:1"}}
	if err := fitsMemory(tiers, false, 16<<30); err != nil {
		t.Errorf("12 GiB in 16 GiB refused: %v", err)
	}
	err := fitsMemory(tiers, false, 10<<30)
	if err == nil || !strings.Contains(err.Error(), "(hbm, dram)") || !strings.Contains(err.Error(), "12.0 GiB") || !strings.Contains(err.Error(), "--block-bytes") {
		t.Errorf("12 GiB in 10 GiB: %v", err)
	}
	if err := fitsMemory(tiers, true, 10<<30); err != nil {
		t.Errorf("HBM on a GPU counted as host memory: %v", err)
	}
	tiers[3].Endpoint = ""
	if err := fitsMemory(tiers, true, 10<<30); err == nil || !strings.Contains(err.Error(), "dram, far") {
		t.Errorf("an emulated remote tier not counted: %v", err)
	}
	if err := fitsMemory([]TierSpec{{Name: "a", Kind: "dram", Capacity: 1 << 62}, {Name: "b", Kind: "dram", Capacity: 1 << 62}}, false, 1<<30); err == nil {
		t.Error("an overflowing sum passed")
	}
	if _, err := OpenStores([]TierSpec{{Name: "dram", Kind: "dram", Capacity: 1 << 60}}, TierOptions{SlotBytes: 4096}); err == nil || !strings.Contains(err.Error(), "available") {
		t.Errorf("OpenStores of 1 EiB of DRAM: %v", err)
	}
}

// TestFitsDevice: tiers kept in GPU memory (hbm on a real GPU, not
// pinned host buffers) that would take more than the device has free are
// refused before any is made, naming them, the device and both sizes.
func TestFitsDevice(t *testing.T) {
	tiers := []TierSpec{{Name: "hbm", Kind: "hbm", Capacity: 12 << 30}, {Name: "pin", Kind: "pinned", Capacity: 1 << 50}, {Name: "dram", Kind: "dram", Capacity: 1 << 50}}
	if err := fitsDevice(tiers, 16<<30, "Fake H200"); err != nil {
		t.Errorf("12 GiB in 16 GiB free refused: %v", err)
	}
	err := fitsDevice(tiers, 10<<30, "Fake H200")
	if err == nil || !strings.Contains(err.Error(), "(hbm)") || !strings.Contains(err.Error(), "12.0 GiB") || !strings.Contains(err.Error(), "10.0 GiB free on Fake H200") {
		t.Errorf("12 GiB in 10 GiB free: %v", err)
	}
}

// TestMemInfo: the figures fitsMemory and iobench read are there and
// ordered (available at most total); an unknown key is 0.
func TestMemInfo(t *testing.T) {
	total, avail := MemInfo("MemTotal"), MemInfo("MemAvailable")
	if total <= 0 || avail <= 0 || avail > total {
		t.Errorf("MemTotal %d, MemAvailable %d", total, avail)
	}
	if MemInfo("NoSuchField") != 0 || MemInfo("MemTot") != 0 {
		t.Error("a missing or partial key read as a figure")
	}
}
