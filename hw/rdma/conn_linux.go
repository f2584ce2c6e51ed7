//go:build linux && (amd64 || arm64)

package rdma

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Conn is a connected queue pair between two processes, each exposing one
// registered region to the other: Read and Write are one-sided RDMA
// operations on the peer's region, which the peer's CPU does not see.
type Conn struct {
	qp    *QP
	local *Region
	peer  Peer
	ctl   net.Conn
}

// Dial connects to a peer that Accepts on addr (host:port of the TCP
// control connection), exposing local.
func Dial(addr string, d *Device, local *Region) (*Conn, error) {
	ctl, err := net.DialTimeout("tcp", addr, d.opts.Timeout)
	if err != nil {
		return nil, fmt.Errorf("rdma: control connection to %s: %w", addr, err)
	}
	return handshake(ctl, d, local)
}

// Accept takes one peer from ln, exposing local.
func Accept(ln net.Listener, d *Device, local *Region) (*Conn, error) {
	ctl, err := ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("rdma: control connection: %w", err)
	}
	return handshake(ctl, d, local)
}

// Handshake connects a queue pair over a control connection the caller
// accepted (a server that handshakes each peer on its own goroutine, so a
// slow one holds up no other). It closes ctl when it fails.
func Handshake(ctl net.Conn, d *Device, local *Region) (*Conn, error) {
	return handshake(ctl, d, local)
}

// handshake is the same on both sides: send our queue pair and regions,
// read the peer's, bring the queue pair to RTS, then exchange one byte so
// neither side issues an operation before the other's queue pair can take
// it (a queue pair below RTR drops what arrives).
func handshake(ctl net.Conn, d *Device, local *Region) (*Conn, error) {
	c := &Conn{local: local, ctl: ctl}
	fail := func(err error) (*Conn, error) {
		if c.qp != nil {
			c.qp.Close()
		}
		ctl.Close()
		return nil, err
	}
	if local == nil || local.dev != d {
		return fail(errors.New("rdma: the region is registered on another device"))
	}
	ctl.SetDeadline(time.Now().Add(d.opts.Timeout))
	qp, err := d.NewQP(maxBatch)
	if err != nil {
		return fail(err)
	}
	c.qp = qp
	if err := writePeer(ctl, Peer{Endpoint: qp.Endpoint(), MRs: local.Remote()}); err != nil {
		return fail(fmt.Errorf("rdma: sending our connection data to %s: %w", ctl.RemoteAddr(), err))
	}
	if c.peer, err = readPeer(ctl); err != nil {
		return fail(fmt.Errorf("rdma: from %s: %w", ctl.RemoteAddr(), err))
	}
	if err := qp.Connect(c.peer.Endpoint); err != nil {
		return fail(err)
	}
	var b [1]byte
	if _, err := ctl.Write([]byte{'R'}); err != nil {
		return fail(fmt.Errorf("rdma: control connection to %s: %w", ctl.RemoteAddr(), err))
	}
	if _, err := io.ReadFull(ctl, b[:]); err != nil || b[0] != 'R' {
		return fail(fmt.Errorf("rdma: %s did not confirm its queue pair is ready: %v", ctl.RemoteAddr(), err))
	}
	ctl.SetDeadline(time.Time{})
	return c, nil
}

// Peer is the other side's connection data.
func (c *Conn) Peer() Peer { return c.peer }

// RemoteLen is how many bytes the peer exposes.
func (c *Conn) RemoteLen() uint64 {
	var n uint64
	for _, m := range c.peer.MRs {
		n += m.Len
	}
	return n
}

// Read copies len(dst) bytes at offset off of the peer's region into dst,
// which must lie in the local registered region (RDMA READ).
func (c *Conn) Read(dst []byte, off uint64) error {
	return c.qp.transfer(wrRDMARead, c.local, dst, c.peer.MRs, off)
}

// Write copies src, which must lie in the local registered region, to
// offset off of the peer's region (RDMA WRITE).
func (c *Conn) Write(src []byte, off uint64) error {
	return c.qp.transfer(wrRDMAWrite, c.local, src, c.peer.MRs, off)
}

// Wait blocks until the peer closes the control connection (or Close is
// called): the side that only exposes its region learns so that its peer
// is done. Anything the peer sends on it is discarded.
func (c *Conn) Wait() error {
	_, err := io.Copy(io.Discard, c.ctl)
	return err
}

// Close destroys the queue pair and closes the control connection; the
// region and device stay the caller's.
func (c *Conn) Close() error {
	return errors.Join(c.qp.Close(), c.ctl.Close())
}
