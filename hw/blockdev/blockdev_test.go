//go:build linux

package blockdev

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kvsim/hw/internal/hwtest"
	"kvsim/hw/ioengine"
)

// device makes a zero-filled file of n bytes on a filesystem with O_DIRECT.
func device(t *testing.T, n int64) string {
	t.Helper()
	dir := hwtest.DiskDir(t, func(dir string) bool { _, _, err := ioengine.ProbeDirectIO(dir); return err == nil })
	p := filepath.Join(dir, "ns.img")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
	return p
}

func block(b int32, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(int(b)*31 + i)
	}
	return out
}

// exercise puts, gets, overwrites and deletes blocks on a store of 3
// slots and checks what it reads back.
func exercise(t *testing.T, s *Store) {
	t.Helper()
	for b := int32(0); b < 3; b++ {
		if err := s.Put(b, block(b, 5000+int(b))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(9, block(9, 10)); err == nil || !strings.Contains(err.Error(), "slots full") {
		t.Fatalf("a fourth block in 3 slots: %v", err)
	}
	if err := s.Put(1, block(1, 9000)); err == nil {
		t.Fatal("a block larger than a slot: no error")
	}
	s.Delete(0)
	if s.Has(0) || !s.Has(1) {
		t.Fatal("Has after Delete")
	}
	if err := s.Put(1, block(7, 100)); err != nil { // an overwrite takes the freed slot
		t.Fatal(err)
	}
	dst := make([]byte, 8192)
	for b, want := range map[int32][]byte{1: block(7, 100), 2: block(2, 5002)} {
		n, err := s.Get(b, dst)
		if err != nil || !bytes.Equal(dst[:n], want) {
			t.Fatalf("block %d: %d bytes, %v", b, n, err)
		}
	}
	if _, err := s.Get(0, dst); err == nil {
		t.Fatal("a deleted block was served")
	}
}

// TestFileStore: a blank file is claimed (its signature written), serves
// what was put, catches a corrupt slot by its checksum, and is taken again
// (empty) on reopening.
func TestFileStore(t *testing.T) {
	p := device(t, headerBytes+3*8192)
	s, err := Open(Options{Path: p, SlotBytes: 8000, Engine: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Claimed || s.Slots() != 3 || s.SlotBytes() != 8192 || s.Kind != "file" {
		t.Fatalf("claimed %v, %d slots of %d, %s", s.Claimed, s.Slots(), s.SlotBytes(), s.Kind)
	}
	exercise(t, s)
	// Flip a byte of block 2's slot behind the store's back.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	idx := s.index[2].idx
	if _, err := f.WriteAt([]byte{0xff}, s.off(idx)+17); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := s.Get(2, make([]byte, 8192)); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a corrupt slot: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Path: p, SlotBytes: 8000, Engine: "pread"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Claimed || s.Has(1) {
		t.Fatalf("reopened: claimed again %v, still holds block 1 %v", s.Claimed, s.Has(1))
	}
}

// TestRefusesForeignData: a device whose first 64 KiB hold anything but
// zeros or kvsim's signature is refused, and left as it was.
func TestRefusesForeignData(t *testing.T) {
	p := device(t, headerBytes+4*8192)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("\x53\xef"), 1080); err != nil { // an ext4 superblock's magic
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(p)
	if _, err := Open(Options{Path: p, SlotBytes: 4096, Engine: "auto"}); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "will not overwrite") {
		t.Fatalf("a device with data: %v", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
		t.Fatal("a refused device was changed")
	}
	if _, err := Open(Options{Path: p + ".none", SlotBytes: 4096}); err == nil {
		t.Fatal("a missing device: no error")
	}
	if _, err := Open(Options{Path: device(t, headerBytes), SlotBytes: 4096}); err == nil || !strings.Contains(err.Error(), "hold no") {
		t.Fatalf("a device too small for one slot: %v", err)
	}
}

// TestLoopDevice: a loop device stands in for an NVMe-oF namespace (as
// the label says): the same store on a real block device.
func TestLoopDevice(t *testing.T) {
	hwtest.Root(t)
	img := device(t, headerBytes+3*8192)
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		hwtest.Lacks(t, "no loop device (losetup: %v)", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "--detach", dev).Run() })
	s, err := Open(Options{Path: dev, SlotBytes: 8000, Engine: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind != "block device" || !s.Claimed {
		t.Fatalf("%s: kind %q, claimed %v", dev, s.Kind, s.Claimed)
	}
	exercise(t, s)
}

// TestCapacity: a device gets a slot per full block of the capacity (a
// block size off the alignment included) and room for short blocks
// beyond, bounded; one with fewer slots than the capacity needs is
// refused, saying both sizes, and left blank.
func TestCapacity(t *testing.T) {
	p := device(t, headerBytes+8*12288)
	s, err := Open(Options{Path: p, SlotBytes: 10000, Capacity: 8 * 10000, Engine: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Slots() != 8 {
		t.Errorf("%d slots, want 8", s.Slots())
	}
	s.Close()
	var small *TooSmall
	if _, err := Open(Options{Path: p, SlotBytes: 10000, Capacity: 8*10000 + 1, Engine: "auto"}); !errors.As(err, &small) || small.NeedSlots != 9 || small.Slots != 8 ||
		!strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "1.09 MiB") || !strings.Contains(err.Error(), "1.11 MiB") {
		t.Fatalf("a device a slot short: %v", err)
	}
	big := device(t, headerBytes+1000*4096)
	if s, err = Open(Options{Path: big, SlotBytes: 4096, Capacity: 10 * 4096, Engine: "auto"}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Slots() != 2*10+64 {
		t.Errorf("%d slots, want 84", s.Slots())
	}
	if b, _ := os.ReadFile(big); bytes.Count(b[probeBytes:], []byte{0}) != len(b)-probeBytes {
		t.Error("opening wrote past the signature")
	}
}
