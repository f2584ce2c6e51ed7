package events

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"
)

// BlockHash is the 64-bit hash kvsim publishes for its block id b:
// SplitMix64's finaliser over b, a bijection, so distinct blocks never
// collide and the same trace gives the same hashes on every run and
// instance (as content hashes do on real engines).
func BlockHash(b int64) uint64 {
	z := uint64(b) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// PublishOptions configure a Publisher.
type PublishOptions struct {
	// Endpoint is tcp://HOST:PORT: instance i publishes at PORT+i (vLLM's
	// data-parallel convention) and serves replays at PORT+Instances+i.
	Endpoint  string
	Instances int
	// Media names each tier's medium ("GPU", "CPU", "STORAGE").
	Media []string
	// BlockTokens is each event's block_size.
	BlockTokens int
	Encoding    Encoding
	// Pace > 0 runs simulated time at most Pace times the wall clock and
	// drops (counts) frames the sockets cannot take; 0 waits for the
	// sockets instead, as fast as they go.
	Pace float64
	// Buffer is how many batches each instance keeps for replay.
	Buffer int
	// Topic is every frame's topic.
	Topic string
	// HWM bounds the frames the library queues for the sockets (0:
	// 100000, vLLM's default); beyond it the library drops them, and a
	// subscriber sees a gap to refill from the replay socket.
	HWM int
	// StallAfter: while a write to one of an instance's subscribers has
	// been blocked this long (0: 100 ms), that instance's frames are not
	// handed to the library but dropped and counted (they stay in the
	// replay buffer).
	StallAfter time.Duration
	// Name, when set, names block b as an engine would: its hash and,
	// when its tokens are known, them and its parent block (vLLM's
	// chained hash). Unset: BlockHash(b), no tokens.
	Name func(b int64) BlockName
}

// BlockName is what a BlockStored says of one block.
type BlockName struct {
	Hash uint64
	// Tokens are the block's token ids (nil: unknown); Parent is the block
	// before it in its prompt, -1 for the first.
	Tokens []int64
	Parent int64
}

// PublishSummary is what a Publisher sent.
type PublishSummary struct {
	Frames  int64 // batches handed to the sockets
	Events  int64
	Dropped int64 // batches a full queue refused (paced): in the replay buffer still
	// Stalled counts batches withheld from the sockets while a subscriber
	// of their instance was not reading (in the replay buffer still).
	// Frames = batches published - Dropped - Stalled.
	Stalled int64
	Replays int64 // replay requests served
}

type frame struct {
	inst    int
	seq     uint64
	payload []byte
}

type instPub struct {
	pub    zmq4.Socket
	watch  *watch // the PUB socket's subscribers' connections
	router zmq4.Socket
	where  []uint8
	batch  Batch
	at     int64 // simulated ns of batch
	last   int64 // block id last added to the batch's last event
	seq    uint64
	mu     sync.Mutex
	ring   []frame // replay buffer, oldest first
}

// Publisher publishes simulated instances' residency changes as vLLM KV
// events. Observe is called from the simulation; sockets are served by
// goroutines of their own.
type Publisher struct {
	opt   PublishOptions
	insts []*instPub
	out   chan frame
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	start time.Time
	sent  sync.WaitGroup // the sending goroutine
	sum   PublishSummary
	// Counted by the sockets' goroutines.
	frames, replays, stalled atomic.Int64
	err                      error
}

// SplitEndpoint parses tcp://HOST:PORT.
func SplitEndpoint(ep string) (host string, port int, err error) {
	rest, ok := strings.CutPrefix(ep, "tcp://")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return "", 0, fmt.Errorf("%q: want tcp://HOST:PORT", ep)
	}
	port, err = strconv.Atoi(rest[i+1:])
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q: bad port", ep)
	}
	return rest[:i], port, nil
}

// NewPublisher binds every instance's PUB and replay ROUTER sockets.
func NewPublisher(opt PublishOptions) (*Publisher, error) {
	host, port, err := SplitEndpoint(opt.Endpoint)
	if err != nil {
		return nil, err
	}
	if opt.Instances < 1 || port+2*opt.Instances-1 > 65535 {
		return nil, fmt.Errorf("%d instances need ports %d..%d", opt.Instances, port, port+2*opt.Instances-1)
	}
	if opt.Buffer <= 0 {
		opt.Buffer = 10000
	}
	if opt.HWM <= 0 {
		opt.HWM = 100000
	}
	if opt.StallAfter <= 0 {
		opt.StallAfter = 100 * time.Millisecond
	}
	registerWatch()
	ctx, stop := context.WithCancel(context.Background())
	p := &Publisher{opt: opt, ctx: ctx, stop: stop, out: make(chan frame, 4096), start: time.Now()}
	for i := range opt.Instances {
		ip := &instPub{pub: zmq4.NewPub(ctx), router: zmq4.NewRouter(ctx), at: -1}
		ip.batch.Rank = int64(i)
		p.insts = append(p.insts, ip)
		ip.pub.SetOption(zmq4.OptionHWM, opt.HWM)
		addr := net.JoinHostPort(host, strconv.Itoa(port+i))
		if err := ip.pub.Listen(watchScheme + "://" + addr); err != nil {
			p.closeSockets()
			return nil, fmt.Errorf("instance %d: %w", i, err)
		}
		key, _ := transport.New("tcp").Addr(addr)
		if ip.watch = watchFor(key); ip.watch == nil {
			p.closeSockets()
			return nil, fmt.Errorf("instance %d: no watch on %s", i, key)
		}
		if err := ip.router.Listen(fmt.Sprintf("tcp://%s:%d", host, port+opt.Instances+i)); err != nil {
			p.closeSockets()
			return nil, fmt.Errorf("instance %d replay: %w", i, err)
		}
	}
	p.sent.Add(1)
	go p.send()
	for _, ip := range p.insts {
		p.wg.Add(1)
		go p.serveReplay(ip)
	}
	return p, nil
}

func (p *Publisher) closeSockets() {
	p.stop()
	for _, ip := range p.insts {
		ip.pub.Close()
		ip.router.Close()
	}
}

// Observe is a residency change of block b on instance inst at simulated
// time now: where has bit t set when tier t holds b.
func (p *Publisher) Observe(inst int, now int64, b int64, where uint8) {
	ip := p.insts[inst]
	if int(b) >= len(ip.where) {
		n := max(2*len(ip.where), int(b)+1, 1024)
		w := make([]uint8, n)
		copy(w, ip.where)
		ip.where = w
	}
	old := ip.where[b]
	ip.where[b] = where
	if old == where {
		return
	}
	if ip.at != now && len(ip.batch.Events) > 0 {
		p.flush(inst)
	}
	ip.at = now
	for d := old ^ where; d != 0; d &= d - 1 {
		t := bits.TrailingZeros8(d)
		k := Removed
		if where&(1<<t) != 0 {
			k = Stored
		}
		p.add(ip, k, p.medium(t), b)
	}
	if len(ip.batch.Events) >= 512 {
		p.flush(inst)
	}
}

func (p *Publisher) medium(t int) string {
	if t < len(p.opt.Media) {
		return p.opt.Media[t]
	}
	return "STORAGE"
}

// add appends block b to the batch's last event when it is alike, else
// starts an event. With token ids, a stored block joins an event only as
// the next block of its chain, so that the event's parent_block_hash and
// token_ids describe every block in it.
func (p *Publisher) add(ip *instPub, k Kind, medium string, b int64) {
	n := BlockName{Hash: BlockHash(b), Parent: -1}
	if p.opt.Name != nil {
		n = p.opt.Name(b)
	}
	withTokens := k == Stored && n.Tokens != nil
	evs := ip.batch.Events
	if i := len(evs) - 1; i >= 0 && evs[i].Kind == k && evs[i].Medium == medium &&
		(len(evs[i].TokenIDs) > 0) == withTokens && (!withTokens || n.Parent == ip.last) {
		evs[i].Hashes = append(evs[i].Hashes, n.Hash)
		if withTokens {
			evs[i].TokenIDs = append(evs[i].TokenIDs, n.Tokens...)
		}
		ip.last = b
		return
	}
	ev := Event{Kind: k, Medium: medium, Hashes: []uint64{n.Hash}, GroupIdx: 0}
	if k == Stored {
		ev.BlockSize = int64(p.opt.BlockTokens)
		ev.TokenIDs = []int64{}
		if withTokens {
			ev.TokenIDs = append(ev.TokenIDs, n.Tokens...)
			if n.Parent >= 0 {
				ev.Parent, ev.HasParent = p.opt.Name(n.Parent).Hash, true
			}
		}
	}
	ip.last = b
	ip.batch.Events = append(evs, ev)
}

// flush encodes instance inst's batch, paces, and queues it.
func (p *Publisher) flush(inst int) {
	ip := p.insts[inst]
	if len(ip.batch.Events) == 0 || p.err != nil {
		return
	}
	ip.batch.TS = float64(ip.at) / 1e9
	payload, err := Encode(&ip.batch, p.opt.Encoding)
	if err != nil {
		p.err = err
		return
	}
	p.sum.Events += int64(len(ip.batch.Events))
	ip.batch.Events = ip.batch.Events[:0]
	f := frame{inst: inst, seq: ip.seq, payload: payload}
	ip.seq++
	ip.mu.Lock()
	if len(ip.ring) == p.opt.Buffer {
		ip.ring = append(ip.ring[:0], ip.ring[1:]...)
	}
	ip.ring = append(ip.ring, f)
	ip.mu.Unlock()
	if p.opt.Pace <= 0 {
		p.out <- f
		return
	}
	if wait := time.Until(p.start.Add(time.Duration(float64(ip.at) / p.opt.Pace))); wait > 0 {
		time.Sleep(wait)
	}
	select {
	case p.out <- f:
	default:
		p.sum.Dropped++
	}
}

func (p *Publisher) send() {
	defer p.sent.Done()
	topic := []byte(p.opt.Topic)
	for f := range p.out {
		ip := p.insts[f.inst]
		if ip.watch.blocked(time.Now()) >= p.opt.StallAfter {
			p.stalled.Add(1)
			continue
		}
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], f.seq)
		if err := ip.pub.Send(zmq4.NewMsgFrom(topic, seq[:], f.payload)); err == nil {
			p.frames.Add(1)
		}
	}
}

// serveReplay answers [identity, "", seq] with every buffered batch from
// seq on, then the end marker (-1).
func (p *Publisher) serveReplay(ip *instPub) {
	defer p.wg.Done()
	for {
		msg, err := ip.router.Recv()
		if err != nil {
			return
		}
		fr := msg.Frames
		if len(fr) != 3 || len(fr[2]) != 8 {
			continue
		}
		id, from := fr[0], binary.BigEndian.Uint64(fr[2])
		ip.mu.Lock()
		var todo []frame
		for _, f := range ip.ring {
			if f.seq >= from {
				todo = append(todo, f)
			}
		}
		ip.mu.Unlock()
		for _, f := range todo {
			var seq [8]byte
			binary.BigEndian.PutUint64(seq[:], f.seq)
			if ip.router.Send(zmq4.NewMsgFrom(id, nil, seq[:], f.payload)) != nil {
				break
			}
		}
		var end [8]byte
		binary.BigEndian.PutUint64(end[:], endSeq)
		ip.router.Send(zmq4.NewMsgFrom(id, nil, end[:], nil))
		p.replays.Add(1)
	}
}

// Flush sends every instance's last batch and waits until the sockets
// took every queued frame; the replay sockets keep serving until Close.
func (p *Publisher) Flush() (PublishSummary, error) {
	for i := range p.insts {
		p.flush(i)
	}
	close(p.out)
	p.sent.Wait()
	s := p.sum
	s.Replays = p.replays.Load()
	s.Frames = p.frames.Load()
	s.Stalled = p.stalled.Load()
	return s, p.err
}

// Close closes every socket (after Flush).
func (p *Publisher) Close() {
	p.closeSockets()
	p.wg.Wait()
}

// Batches is how many batches instance inst published: its sequence
// numbers ran 0..Batches-1.
func (p *Publisher) Batches(inst int) uint64 { return p.insts[inst].seq }

// Resident is what instance inst holds in tier t as the events told it.
func (p *Publisher) Resident(inst, t int) []uint64 {
	var out []uint64
	for b, w := range p.insts[inst].where {
		if w&(1<<t) != 0 {
			h := BlockHash(int64(b))
			if p.opt.Name != nil {
				h = p.opt.Name(int64(b)).Hash
			}
			out = append(out, h)
		}
	}
	return out
}
