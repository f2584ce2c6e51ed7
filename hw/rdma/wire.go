package rdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Endpoint is what a peer needs to reach one queue pair: its number and
// first packet sequence number, and the port's address (LID on
// InfiniBand, GID on RoCE) and active MTU.
type Endpoint struct {
	QPN  uint32 // 24 bits
	PSN  uint32 // 24 bits
	LID  uint16
	Port uint8
	MTU  uint8 // enum ibv_mtu: 1 = 256 B ... 5 = 4096 B
	GID  [16]byte
}

// RemoteMR is one memory region a peer exposes: its address in the peer's
// address space, length and remote key.
type RemoteMR struct {
	Addr, Len uint64
	RKey      uint32
}

// Peer is one side's connection data, exchanged over the control
// connection: its queue pair and the regions it lets the other side read
// and write, in address order (one registered buffer, split at the
// device's largest memory region).
type Peer struct {
	Endpoint
	MRs []RemoteMR
}

// The control message: "KVRD", version (uint16), body length (uint32),
// then the body, all big-endian:
//
//	qpn u32 | psn u32 | lid u16 | port u8 | mtu u8 | gid [16] | n u16 | n x (addr u64, len u64, rkey u32)
//
// A decoder accepts exactly what the encoder writes: a message of another
// version, a length that disagrees with the count, or trailing bytes are
// refused, so a peer of another kvsim version fails at the handshake with
// a message, not later with a wrong address.
const (
	wireMagic   = "KVRD"
	wireVersion = 1
	wireHeader  = 4 + 2 + 4
	wireFixed   = 4 + 4 + 2 + 1 + 1 + 16 + 2
	wireMR      = 8 + 8 + 4
	maxWireMRs  = 4096 // 4096 regions of the smallest max MR size (1 GiB on common NICs) is 4 TiB
	maxWireBody = wireFixed + maxWireMRs*wireMR
)

// ErrWire marks a control message kvsim cannot use.
var ErrWire = errors.New("rdma control message")

// AppendPeer appends p's control message to b.
func AppendPeer(b []byte, p Peer) ([]byte, error) {
	if len(p.MRs) > maxWireMRs {
		return b, fmt.Errorf("%w: %d memory regions, at most %d", ErrWire, len(p.MRs), maxWireMRs)
	}
	if err := p.check(); err != nil {
		return b, err
	}
	b = append(b, wireMagic...)
	b = binary.BigEndian.AppendUint16(b, wireVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(wireFixed+len(p.MRs)*wireMR))
	b = binary.BigEndian.AppendUint32(b, p.QPN)
	b = binary.BigEndian.AppendUint32(b, p.PSN)
	b = binary.BigEndian.AppendUint16(b, p.LID)
	b = append(b, p.Port, p.MTU)
	b = append(b, p.GID[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.MRs)))
	for _, m := range p.MRs {
		b = binary.BigEndian.AppendUint64(b, m.Addr)
		b = binary.BigEndian.AppendUint64(b, m.Len)
		b = binary.BigEndian.AppendUint32(b, m.RKey)
	}
	return b, nil
}

// DecodePeer reads one whole control message.
func DecodePeer(b []byte) (Peer, error) {
	n, err := wireBodyLen(b)
	if err != nil {
		return Peer{}, err
	}
	if len(b)-wireHeader != n {
		return Peer{}, fmt.Errorf("%w: header says %d body bytes, message has %d", ErrWire, n, len(b)-wireHeader)
	}
	body := b[wireHeader:]
	var p Peer
	be := binary.BigEndian
	p.QPN = be.Uint32(body[0:])
	p.PSN = be.Uint32(body[4:])
	p.LID = be.Uint16(body[8:])
	p.Port, p.MTU = body[10], body[11]
	copy(p.GID[:], body[12:28])
	count := int(be.Uint16(body[28:]))
	if want := wireFixed + count*wireMR; n != want || count > maxWireMRs {
		return Peer{}, fmt.Errorf("%w: %d memory regions need %d body bytes, not %d", ErrWire, count, want, n)
	}
	if count > 0 {
		p.MRs = make([]RemoteMR, count)
	}
	for i := range p.MRs {
		r := body[wireFixed+i*wireMR:]
		p.MRs[i] = RemoteMR{Addr: be.Uint64(r), Len: be.Uint64(r[8:]), RKey: be.Uint32(r[16:])}
	}
	return p, p.check()
}

// wireBodyLen checks a message's header and returns its body length.
func wireBodyLen(h []byte) (int, error) {
	if len(h) < wireHeader {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrWire, len(h), wireHeader)
	}
	if string(h[:4]) != wireMagic {
		return 0, fmt.Errorf("%w: bad magic %q (not a kvsim RDMA peer)", ErrWire, h[:4])
	}
	if v := binary.BigEndian.Uint16(h[4:]); v != wireVersion {
		return 0, fmt.Errorf("%w: version %d, this kvsim speaks %d", ErrWire, v, wireVersion)
	}
	n := binary.BigEndian.Uint32(h[6:])
	if n < wireFixed || n > maxWireBody {
		return 0, fmt.Errorf("%w: body length %d outside [%d, %d]", ErrWire, n, wireFixed, maxWireBody)
	}
	return int(n), nil
}

// check refuses values no queue pair or region can have: numbers beyond
// 24 bits, an MTU outside the enum, empty or wrapping regions, regions
// out of address order or overlapping.
func (p Peer) check() error {
	switch {
	case p.QPN > 0xffffff:
		return fmt.Errorf("%w: QP number %#x beyond 24 bits", ErrWire, p.QPN)
	case p.PSN > 0xffffff:
		return fmt.Errorf("%w: PSN %#x beyond 24 bits", ErrWire, p.PSN)
	case p.MTU < 1 || p.MTU > 5:
		return fmt.Errorf("%w: MTU code %d outside 1..5", ErrWire, p.MTU)
	case p.Port == 0:
		return fmt.Errorf("%w: port 0 (ports count from 1)", ErrWire)
	}
	var end uint64
	for i, m := range p.MRs {
		if m.Len == 0 || m.Addr+m.Len < m.Addr {
			return fmt.Errorf("%w: region %d at %#x, %d bytes: empty or wraps", ErrWire, i, m.Addr, m.Len)
		}
		if i > 0 && m.Addr < end {
			return fmt.Errorf("%w: region %d at %#x overlaps or precedes region %d", ErrWire, i, m.Addr, i-1)
		}
		end = m.Addr + m.Len
	}
	return nil
}

// writePeer sends p's message on w.
func writePeer(w io.Writer, p Peer) error {
	b, err := AppendPeer(nil, p)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// readPeer reads one message from r, its length checked before the body
// is read, so a stranger cannot make kvsim allocate much.
func readPeer(r io.Reader) (Peer, error) {
	var h [wireHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Peer{}, fmt.Errorf("%w: reading the header: %v", ErrWire, err)
	}
	n, err := wireBodyLen(h[:])
	if err != nil {
		return Peer{}, err
	}
	b := make([]byte, wireHeader+n)
	copy(b, h[:])
	if _, err := io.ReadFull(r, b[wireHeader:]); err != nil {
		return Peer{}, fmt.Errorf("%w: reading %d body bytes: %v", ErrWire, n, err)
	}
	return DecodePeer(b)
}
