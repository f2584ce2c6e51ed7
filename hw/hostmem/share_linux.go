//go:build linux

package hostmem

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"kvsim/hw/internal/sys"
)

// The message that goes with the fd: magic, size, page size, backend.
const (
	shareMagic  = "KVSIMPL1"
	shareHdrLen = 64
	shareTimout = 10 * time.Second
)

// ServePool lets other processes of the same user map p: each connection
// to the Unix socket at socketPath (created mode 0600) gets p's memfd by
// SCM_RIGHTS with its size; a peer of another uid (SO_PEERCRED) gets
// nothing and is logged. It returns nil once ctx is done, and removes the
// socket. A stale socket file left by a dead server is replaced.
func ServePool(ctx context.Context, socketPath string, p *Pool) error {
	if p == nil || p.mem == nil {
		return errors.New("serve pool: pool is closed")
	}
	ln, err := listenPrivate(socketPath)
	if err != nil {
		return err
	}
	defer os.Remove(socketPath)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
		case <-stop:
		}
		ln.Close()
	}()
	uid := os.Getuid()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			ln.Close()
			return fmt.Errorf("serve pool %s: %w", socketPath, err)
		}
		if err := sendPool(c, p, uid); err != nil {
			shareLogf("hw: pool %s: %v", socketPath, err)
		}
		c.Close()
	}
}

// listenPrivate makes a listening Unix socket at path whose file is 0600
// from the start: it is bound and chmod'ed under a temporary name, made to
// listen, and only then renamed into place, so the path never names a
// socket that is world-accessible or not yet listening.
func listenPrivate(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("serve pool: %s exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("serve pool: %s is in use by another server", path)
		}
		if !errors.Is(err, unix.ECONNREFUSED) {
			// A full backlog (EAGAIN), a timeout, a permission: a server
			// may well be there.
			return nil, fmt.Errorf("serve pool: %s: cannot tell whether a server is listening (%v); not replacing it", path, err)
		}
		// Stale: nothing listens. The rename below replaces it.
	}
	tmp := filepath.Join(filepath.Dir(path), ".kvsim-"+strconv.FormatUint(rand.Uint64()%(1<<40), 36))
	if len(tmp) >= len(unix.RawSockaddrUnix{}.Path) {
		tmp = path // no room for a longer name: bind in place
		os.Remove(path)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("serve pool: socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	// bind(2) gives the file the socket inode's mode less the umask.
	_ = unix.Fchmod(fd, 0o600)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: tmp}); err != nil {
		return nil, fmt.Errorf("serve pool: bind %s: %w", tmp, err)
	}
	fail := func(err error) (*net.UnixListener, error) {
		os.Remove(tmp)
		return nil, fmt.Errorf("serve pool: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		return fail(fmt.Errorf("listen %s: %w", path, err))
	}
	if tmp != path {
		if err := os.Rename(tmp, path); err != nil {
			return fail(err)
		}
	}
	ln, err := net.FileListener(f)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("serve pool: %w", err)
	}
	return ln.(*net.UnixListener), nil
}

// peerCred is the connecting process's pid/uid/gid, from the kernel.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, nil
}

// sendPool checks the peer, then sends the header with the fd attached.
func sendPool(c *net.UnixConn, p *Pool, uid int) error {
	cred, err := peerCred(c)
	if err != nil {
		return fmt.Errorf("refused a peer: %w", err)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("refused peer pid %d: uid %d is not the pool owner's uid %d", cred.Pid, cred.Uid, uid)
	}
	hdr := make([]byte, shareHdrLen)
	copy(hdr, shareMagic)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(len(p.mem)))
	binary.LittleEndian.PutUint64(hdr[16:], uint64(p.pageSize))
	copy(hdr[24:], p.backend)
	c.SetWriteDeadline(time.Now().Add(shareTimout))
	n, oobn, err := c.WriteMsgUnix(hdr, unix.UnixRights(p.fd.Int()), nil)
	if err == nil && (n != len(hdr) || oobn == 0) {
		err = io.ErrShortWrite
	}
	if errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET) {
		return nil // the peer left: a liveness probe such as listenPrivate's
	}
	if err != nil {
		return fmt.Errorf("send to pid %d: %w", cred.Pid, err)
	}
	return nil
}

// ReceivePool connects to a ServePool socket and maps the pool it sends
// (MAP_SHARED): writes on either side are seen by the other. Close unmaps
// it and closes the received fd; the server's pool is unaffected. It
// refuses a server of another uid (SO_PEERCRED), and an fd that is not a
// memfd sealed against shrinking or is smaller than announced: either
// could make the mapping fault (SIGBUS) or send writes elsewhere. A size
// that is not a whole number of the memfd's pages is refused too.
func ReceivePool(socketPath string) (*Pool, error) {
	c, err := net.DialTimeout("unix", socketPath, shareTimout)
	if err != nil {
		return nil, fmt.Errorf("receive pool: %w", err)
	}
	defer c.Close()
	uc := c.(*net.UnixConn)
	cred, err := peerCred(uc)
	if err != nil {
		return nil, fmt.Errorf("receive pool from %s: %w", socketPath, err)
	}
	if uid := os.Getuid(); int(cred.Uid) != uid {
		return nil, fmt.Errorf("receive pool from %s: refused: the server (pid %d) runs as uid %d, not as this process's uid %d", socketPath, cred.Pid, cred.Uid, uid)
	}
	uc.SetReadDeadline(time.Now().Add(shareTimout))
	hdr := make([]byte, shareHdrLen)
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for stray extra fds, to close them
	n, oobn, flags, _, err := uc.ReadMsgUnix(hdr, oob)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("receive pool from %s: %w", socketPath, err)
	}
	fds, perr := parseRights(oob[:oobn])
	var owned sys.FD // the pool's descriptor, owned from here on
	for i, f := range fds {
		if i == 0 {
			owned = sys.Own(f)
		} else {
			stray := sys.Own(f)
			stray.Close()
		}
	}
	fd := owned.Int()
	closeFD := func(err error) (*Pool, error) {
		owned.Close()
		return nil, fmt.Errorf("receive pool from %s: %w", socketPath, err)
	}
	switch {
	case perr != nil:
		return closeFD(perr)
	case flags&unix.MSG_CTRUNC != 0:
		return closeFD(errors.New("control message truncated (MSG_CTRUNC)"))
	case n == 0:
		return closeFD(errors.New("the server closed the connection without sending the pool (a peer of another uid is refused)"))
	case fd < 0:
		return closeFD(errors.New("no file descriptor came with the message"))
	}
	if n < len(hdr) {
		if _, err := io.ReadFull(uc, hdr[n:]); err != nil {
			return closeFD(fmt.Errorf("short header: %w", err))
		}
	}
	if string(hdr[:8]) != shareMagic {
		return closeFD(fmt.Errorf("not a kvsim pool server (magic %q)", hdr[:8]))
	}
	size := int64(binary.LittleEndian.Uint64(hdr[8:]))
	page := int64(binary.LittleEndian.Uint64(hdr[16:]))
	backend := string(bytes.TrimRight(hdr[24:], "\x00"))
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return closeFD(fmt.Errorf("refused: the fd is not a memfd (F_GET_SEALS: %w)", err))
	}
	if seals&unix.F_SEAL_SHRINK == 0 {
		return closeFD(fmt.Errorf("refused: the memfd is not sealed against shrinking (seals %#x), so a truncate could fault our mapping", seals))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return closeFD(fmt.Errorf("fstat: %w", err))
	}
	if size <= 0 || st.Size < size {
		return closeFD(fmt.Errorf("refused: pool size %d does not fit the file's %d bytes", size, st.Size))
	}
	if bs := int64(st.Blksize); bs > 0 && size%bs != 0 {
		// On hugetlb the kernel maps whole pages and Close's unmap of the
		// announced size would fail, leaving the mapping behind.
		return closeFD(fmt.Errorf("refused: pool size %d is not a whole number of the file's %d-byte pages", size, bs))
	}
	mem, err := mmapShared(fd, size)
	if err != nil {
		return closeFD(err)
	}
	return &Pool{mem: mem, fd: owned, backend: backend, pageSize: page}, nil
}

func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			continue
		}
		f, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fds, fmt.Errorf("SCM_RIGHTS: %w", err)
		}
		fds = append(fds, f...)
	}
	return fds, nil
}
