//go:build linux

package hostmem

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Hostile peers of pool sharing: none may crash the other side (a
// truncated memfd under a mapping is a SIGBUS on the next touch), and each
// refusal says why.

// hostileHeader is a ServePool header announcing size bytes.
func hostileHeader(size int64) []byte {
	hdr := make([]byte, shareHdrLen)
	copy(hdr, shareMagic)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(size))
	binary.LittleEndian.PutUint64(hdr[16:], 4096)
	copy(hdr[24:], "memfd+4K")
	return hdr
}

// hostileServe answers one connection on sock with hdr and fd, whatever
// the peer.
func hostileServe(t *testing.T, sock string, hdr []byte, fd int) <-chan error {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer ln.Close()
		c, err := ln.AcceptUnix()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, _, err = c.WriteMsgUnix(hdr, unix.UnixRights(fd), nil)
		done <- err
	}()
	return done
}

func memfd(t *testing.T, size int64, flags int, seals int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("kvsim-hostile", unix.MFD_CLOEXEC|flags)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	must(t, unix.Ftruncate(fd, size))
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

// TestShareHostileServer: a server (same uid here) that sends what it
// should not is refused before anything is mapped.
func TestShareHostileServer(t *testing.T) {
	probeLeaks(t)
	dir := t.TempDir()
	plain, err := os.Create(filepath.Join(dir, "plain"))
	must(t, err)
	defer plain.Close()
	must(t, plain.Truncate(1<<20))
	cases := []struct {
		name string
		fd   func() int
		size int64
		want string
	}{
		{"ordinary file", func() int { return int(plain.Fd()) }, 1 << 20, "not a memfd"},
		{"unsealed memfd", func() int { return memfd(t, 1<<20, 0, 0) }, 1 << 20, "not sealed against shrinking"},
		{"sealable, unsealed memfd", func() int { return memfd(t, 1<<20, unix.MFD_ALLOW_SEALING, unix.F_SEAL_GROW) }, 1 << 20, "not sealed against shrinking"},
		{"smaller than announced", func() int { return memfd(t, 1<<20, unix.MFD_ALLOW_SEALING, poolSeals) }, 2 << 20, "does not fit the file's"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sock := filepath.Join(dir, fmt.Sprintf("s%d.sock", i))
			done := hostileServe(t, sock, hostileHeader(c.size), c.fd())
			q, err := ReceivePool(sock)
			if err == nil {
				q.Close()
				t.Fatal("received and mapped it")
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "receive pool from "+sock) {
				t.Fatalf("error %q, want it to say %q", err, c.want)
			}
			t.Logf("%v", err)
			<-done
		})
	}
}

// TestShareShrink: neither side can shrink (or grow) a shared pool, so
// neither can fault the other's mapping.
func TestShareShrink(t *testing.T) {
	probeLeaks(t)
	p := newTestPool(t, PoolOptions{Size: 1 << 20})
	sock := filepath.Join(t.TempDir(), "pool.sock")
	startServe(t, sock, p)
	q, err := ReceivePool(sock)
	must(t, err)
	defer q.Close()
	for _, c := range []struct {
		side string
		fd   int
	}{{"client", q.Fd()}, {"server", p.Fd()}} {
		for _, size := range []int64{0, 4096, 2 << 20} {
			if err := unix.Ftruncate(c.fd, size); !errors.Is(err, unix.EPERM) {
				t.Errorf("%s truncate to %d: %v, want EPERM (sealed)", c.side, size, err)
			}
		}
		var st unix.Stat_t
		must(t, unix.Fstat(c.fd, &st))
		if st.Size != p.Size() {
			// Touching the mapping now would be a SIGBUS: stop here.
			t.Fatalf("%s could resize the pool to %d bytes", c.side, st.Size)
		}
		if _, err := unix.FcntlInt(uintptr(c.fd), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); !errors.Is(err, unix.EPERM) {
			t.Errorf("%s added a seal: %v, want EPERM (F_SEAL_SEAL)", c.side, err)
		}
	}
	last := len(p.Bytes()) - 1
	p.Bytes()[last] = 9
	if q.Bytes()[last] != 9 {
		t.Fatal("the mapping does not share pages")
	}
}

// The hostile server of another uid: the test binary run again as nobody.
const hostileEnv = "KVSIM_TEST_HOSTILE_SERVER"

// TestShareHostileServerProcess is that server; run normally it does
// nothing. It hands whoever connects an fd to an ordinary file it owns.
func TestShareHostileServerProcess(t *testing.T) {
	sock := os.Getenv(hostileEnv)
	if sock == "" {
		return
	}
	f, err := os.Create(sock + ".file")
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 20)
	done := hostileServe(t, sock, hostileHeader(1<<20), int(f.Fd()))
	fmt.Println("listening")
	select {
	case err := <-done:
		fmt.Println("served:", err)
	case <-time.After(20 * time.Second):
	}
}

// TestShareOtherUserServer: a server of another uid is refused by the
// client before it reads a byte, whatever it would send.
func TestShareOtherUserServer(t *testing.T) {
	probeRoot(t)
	probeLeaks(t)
	dir, err := os.MkdirTemp("", "kvsim-hostile-")
	must(t, err)
	defer os.RemoveAll(dir)
	must(t, os.Chmod(dir, 0o777))
	exe, _ := os.Executable()
	bin, err := os.ReadFile(exe)
	must(t, err)
	peer := filepath.Join(dir, "peer.test")
	must(t, os.WriteFile(peer, bin, 0o755))
	sock := filepath.Join(dir, "hostile.sock")
	cmd := exec.Command(peer, "-test.run=^TestShareHostileServerProcess$")
	cmd.Env = append(os.Environ(), hostileEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	defer cmd.Wait()
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "listening" {
		t.Fatalf("hostile server: %q", sc.Text())
	}
	q, err := ReceivePool(sock)
	if err == nil {
		q.Close()
		t.Fatal("took a pool from a server of another uid")
	}
	if !strings.Contains(err.Error(), "runs as uid 65534") {
		t.Fatalf("error %q", err)
	}
	t.Logf("%v", err)
}

// TestListenPrivateBusy: a live server whose backlog is full answers a
// probe with EAGAIN, not ECONNREFUSED; its socket must not be replaced.
func TestListenPrivateBusy(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "busy.sock")
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	must(t, unix.Bind(fd, &unix.SockaddrUnix{Name: sock}))
	must(t, unix.Listen(fd, 0))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 8 {
		c, err := net.DialTimeout("unix", sock, 100*time.Millisecond)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	var before unix.Stat_t
	must(t, unix.Stat(sock, &before))
	ln, err := listenPrivate(sock)
	if err == nil {
		ln.Close()
		t.Fatal("replaced the socket of a live server")
	}
	if !strings.Contains(err.Error(), "cannot tell whether a server is listening") {
		t.Fatalf("error %q", err)
	}
	var after unix.Stat_t
	must(t, unix.Stat(sock, &after))
	if after.Ino != before.Ino {
		t.Fatal("socket file replaced")
	}
}

// TestShareHostileHugeSize: a hugetlb memfd announced with a size that is
// not a whole number of its pages is refused: the kernel would map whole
// pages, and unmapping the announced size fails (EINVAL), leaving the
// mapping behind.
func TestShareHostileHugeSize(t *testing.T) {
	probeLeaks(t)
	if free := freeHugepages(t, "2MB", 1); free < 1 {
		probeLacks(t, "no free 2MB hugepage")
	}
	fd := memfd(t, 2<<20, unix.MFD_ALLOW_SEALING|unix.MFD_HUGETLB|unix.MFD_HUGE_2MB, poolSeals)
	sock := filepath.Join(t.TempDir(), "huge.sock")
	done := hostileServe(t, sock, hostileHeader(4096), fd)
	q, err := ReceivePool(sock)
	<-done
	if err == nil {
		cerr := q.Close()
		t.Fatalf("received a 4096-byte pool of 2 MiB pages (close: %v)", cerr)
	}
	if !strings.Contains(err.Error(), "not a whole number of the file's 2097152-byte pages") {
		t.Fatalf("error %q", err)
	}
	t.Logf("%v", err)
}
