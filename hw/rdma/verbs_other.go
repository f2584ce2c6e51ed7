//go:build !(linux && (amd64 || arm64))

package rdma

import "net"

// The verbs path is 64-bit Linux only; elsewhere every entry point says so.

type Lib struct{}

func Load() (*Lib, error)                          { return nil, ErrUnsupported }
func LoadPath(string) (*Lib, error)                { return nil, ErrUnsupported }
func (l *Lib) Path() string                        { return "" }
func (l *Lib) Devices() ([]DeviceInfo, error)      { return nil, ErrUnsupported }
func (l *Lib) Open(Options) (*Device, error)       { return nil, ErrUnsupported }
func ProbeVerbs() Probe                            { return Probe{Err: ErrUnsupported} }
func Dial(string, *Device, *Region) (*Conn, error) { return nil, ErrUnsupported }
func Accept(net.Listener, *Device, *Region) (*Conn, error) {
	return nil, ErrUnsupported
}
func Handshake(net.Conn, *Device, *Region) (*Conn, error) { return nil, ErrUnsupported }

type Device struct{}

func (d *Device) Info() DeviceInfo                 { return DeviceInfo{} }
func (d *Device) Port() PortInfo                   { return PortInfo{} }
func (d *Device) Close() error                     { return nil }
func (d *Device) Register([]byte) (*Region, error) { return nil, ErrUnsupported }
func (d *Device) NewQP(int) (*QP, error)           { return nil, ErrUnsupported }

type Region struct{}

func (r *Region) MRs() int           { return 0 }
func (r *Region) Remote() []RemoteMR { return nil }
func (r *Region) Close() error       { return nil }

type QP struct{}

func (q *QP) Endpoint() Endpoint     { return Endpoint{} }
func (q *QP) State() string          { return "" }
func (q *QP) Connect(Endpoint) error { return ErrUnsupported }
func (q *QP) Close() error           { return nil }

type Conn struct{}

func (c *Conn) Peer() Peer                 { return Peer{} }
func (c *Conn) RemoteLen() uint64          { return 0 }
func (c *Conn) Read([]byte, uint64) error  { return ErrUnsupported }
func (c *Conn) Write([]byte, uint64) error { return ErrUnsupported }
func (c *Conn) Wait() error                { return nil }
func (c *Conn) Close() error               { return nil }
