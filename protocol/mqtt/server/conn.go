package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/mqtt/mapping"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// conn is one client connection. Its reader goroutine (serve) decodes and
// handles packets; the pumps of its subscriptions write PUBLISH packets;
// writes are serialized by wmu.
type conn struct {
	s    *Server
	nc   net.Conn
	addr netip.AddrPort
	dec  *packet.Decoder

	version   byte
	ss        *session
	principal hook.Principal
	hookCtx   context.Context // carries the hook.Client
	ctx       context.Context
	cancel    context.CancelFunc

	wmu         sync.Mutex
	wbuf        []byte            // packets queued; nil when none (then wbufp too)
	wbufp       *[]byte           // the pooled buffer wbuf is in
	aliasOutMax int               // the client's Topic Alias Maximum (v5)
	aliasesOut  map[string]uint16 // topic → alias given; under wmu

	credits       chan struct{} // free outbound QoS > 0 slots
	clientMaxSize int           // the client's Maximum Packet Size; 0 none
	aliasIn       map[uint16]string
	keepAlive     time.Duration
	will          *mapping.Message
	willDelay     uint32

	pumpMu sync.Mutex
	pumps  map[string]context.CancelFunc // by raw filter
	pumpWG sync.WaitGroup

	problemInfo bool // v5: the client takes reason strings on acknowledgements
	quiet       bool // the reader's last wait took parkAfter or more; reader only
	timeoutSafe bool // a read that times out loses nothing (TCP, TLS)

	// The reader's batch: state its packets changed and the answers
	// that promise it, written (synced when one needs it) and then
	// sent before the reader waits, so that a burst of QoS 2 packets
	// costs one sync, not one each (commitReader). Reader only.
	rops  []engine.StateOp
	rsync bool
	racks []packet.Packet

	// The reader's publish batch: a burst's PUBLISH packets of QoS 0
	// and 1, not retained, to one engine topic, stored in one append
	// before the answers queued after them go (commitReader). Reader
	// only.
	pubs publishBatch

	clean     atomic.Bool // a DISCONNECT ended it: no will
	takenOver atomic.Bool
	revoked   atomic.Bool // its rights were withdrawn (revoke)
	acked     atomic.Bool // its CONNACK is written: a revocation may follow it
	stopping  atomic.Bool // the server is shutting down
	done      chan struct{}
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, done: make(chan struct{}), pumps: map[string]context.CancelFunc{}}
	if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
		c.addr = ap
	}
	// A small read buffer, from a pool and given back while the
	// connection waits (readLoop); larger packets are read into a
	// buffer of their own.
	c.dec = packet.NewParkingDecoder(nc, 1024)
	switch nc.(type) {
	case *net.TCPConn, *tls.Conn:
		c.timeoutSafe = true
	}
	c.dec.FromClient = true
	c.dec.Reuse = true // each packet is handled before the next is read
	c.dec.Reserve = func(n int) (func(), error) {
		if err := s.mem.acquire(c.ctx, int64(n)); err != nil {
			return nil, err
		}
		return func() { s.mem.release(int64(n)) }, nil
	}
	c.dec.MaxSize = s.opts.MaxPacketSize
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	return c
}

// write sends p at once, after whatever is queued.
func (c *conn) write(p packet.Packet) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.appendLocked(p); err != nil {
		return err
	}
	return c.flushLocked()
}

// queue adds p to what the next flush sends (a pump's batch, or the
// reader's acknowledgements, flushed before it waits for the client),
// flushing once 64 KiB are waiting.
func (c *conn) queue(p packet.Packet) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.appendLocked(p); err != nil {
		return err
	}
	if len(c.wbuf) >= 64<<10 {
		return c.flushLocked()
	}
	return nil
}

// flush sends what is queued.
func (c *conn) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.flushLocked()
}

// wbufs pools the write buffers: a connection holds one only from its
// first queued packet until the flush.
var wbufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (c *conn) appendLocked(p packet.Packet) error {
	if pub, ok := p.(*packet.Publish); ok && c.aliasOutMax > 0 {
		c.aliasOut(pub)
	}
	if c.wbufp == nil {
		c.wbufp = wbufs.Get().(*[]byte)
		c.wbuf = (*c.wbufp)[:0]
	}
	b, err := p.AppendTo(c.wbuf, c.version)
	if err != nil {
		return err
	}
	c.wbuf = b
	return nil
}

func (c *conn) flushLocked() error {
	if len(c.wbuf) == 0 {
		if c.wbufp != nil { // an append that failed
			wbufs.Put(c.wbufp)
			c.wbuf, c.wbufp = nil, nil
		}
		return nil
	}
	timeout := c.s.opts.WriteTimeout
	if c.stopping.Load() || c.takenOver.Load() || c.revoked.Load() {
		timeout = time.Second // a last word, not a wait
	}
	c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(c.wbuf)
	if cap(c.wbuf) <= 256<<10 { // a large packet's buffer is not kept
		*c.wbufp = c.wbuf[:0]
		wbufs.Put(c.wbufp)
	}
	c.wbuf, c.wbufp = nil, nil
	if err != nil {
		c.nc.Close() // the reader sees it and ends the connection
		return err
	}
	return nil
}

// aliasOut gives a PUBLISH to the client a topic alias when the client
// takes them: the first PUBLISH of a topic carries the topic and its new
// alias, later ones the alias alone. Aliases are handed out in write
// order (wmu held) until the client's maximum; topics past it go in full.
func (c *conn) aliasOut(p *packet.Publish) {
	if a, ok := c.aliasesOut[p.Topic]; ok {
		p.Properties.TopicAlias = a
		p.Topic = ""
		return
	}
	if len(c.aliasesOut) >= c.aliasOutMax {
		return
	}
	if c.aliasesOut == nil {
		c.aliasesOut = map[string]uint16{}
	}
	a := uint16(len(c.aliasesOut) + 1)
	c.aliasesOut[p.Topic] = a
	p.Properties.TopicAlias = a
}

// takeover ends the connection for a new one of the same client id.
func (c *conn) takeover() {
	c.takenOver.Store(true)
	defer c.cancel()                                   // a reader waiting for packet memory stops too
	c.nc.SetWriteDeadline(time.Now().Add(time.Second)) // a write in progress ends soon
	if c.version == packet.Version5 {
		c.write(&packet.Disconnect{ReasonCode: packet.SessionTakenOver})
	}
	c.nc.Close()
}

// shutdown ends the connection as the server stops.
func (c *conn) shutdown() {
	c.stopping.Store(true)
	defer c.cancel()
	c.nc.SetWriteDeadline(time.Now().Add(time.Second)) // a write in progress ends soon
	if c.ss != nil && c.version == packet.Version5 {
		c.write(&packet.Disconnect{ReasonCode: packet.ServerShuttingDown})
	}
	c.nc.Close()
	<-c.done
}

// parkAfter is how long a connection's reader must have waited for its
// last packet to hand the connection, before its next wait, to a fresh
// goroutine (parked): one that waits less keeps its goroutine and read
// buffer, saving their exchange on every burst.
const parkAfter = 20 * time.Millisecond

// parkGrace is how long a parked reader waits for the next packet in its
// own goroutine before it hands the connection to a fresh one: a client
// that publishes right after its CONNECT is answered without a goroutine
// exchange. Only on streams where a read that times out loses nothing
// (TCP, TLS).
const parkGrace = 50 * time.Millisecond

// serve reads the CONNECT and handles the connection.
func (c *conn) serve() {
	c.nc.SetReadDeadline(time.Now().Add(c.s.opts.ConnectTimeout))
	p, err := c.dec.Read()
	if err != nil {
		c.refuseBadConnect(err)
		c.end(false)
		return
	}
	cp, ok := p.(*packet.Connect)
	if !ok {
		c.end(false) // not a CONNECT first: close [MQTT-3.1.0-1]
		return
	}
	c.version = cp.Version
	if !c.connect(cp) {
		c.end(false)
		return
	}
	if c.keepAlive == 0 {
		c.nc.SetReadDeadline(time.Time{})
	}
	c.quiet = true // what follows the CONNECT may take a while
	c.run()
}

// run handles packets until the connection ends, or until it parks to
// wait after a quiet spell: then a fresh goroutine waits for it, so that
// a waiting connection holds a small stack, not the one its packets and
// the CONNECT grew (a stack does not shrink below 4 KiB while in use).
func (c *conn) run() {
	if c.readLoop() {
		go c.parked()
		return
	}
	c.end(true)
}

// parked waits, in a shallow frame, for the next packet of a parked
// connection.
func (c *conn) parked() {
	if err := c.dec.Unpark(); err != nil {
		c.readFailed(err)
		c.end(true)
		return
	}
	c.quiet = false
	c.run()
}

// end closes the connection once its reader is done; connected: the
// CONNECT was accepted, so the session is let go of (teardown).
func (c *conn) end(connected bool) {
	if connected {
		c.teardown()
	}
	c.nc.Close()
	c.dec.Release()
	close(c.done)
	s := c.s
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// refuseBadConnect answers a CONNECT that did not decode, when the spec
// has an answer.
func (c *conn) refuseBadConnect(err error) {
	var pe *packet.Error
	if !errors.As(err, &pe) || pe.Type != packet.CONNECT {
		return
	}
	switch {
	case errors.Is(err, packet.ErrUnsupportedVersion):
		if pe.Version == packet.Version5 {
			c.version = packet.Version5
			c.write(&packet.Connack{ReasonCode: packet.UnsupportedProtocolVersion})
		} else if pe.Version != 0 {
			c.version = packet.Version311
			c.write(&packet.Connack{ReasonCode: packet.V3RefusedProtocolVersion})
		}
	case pe.Version == packet.Version5:
		c.version = packet.Version5
		c.write(&packet.Connack{ReasonCode: pe.Code})
	}
}

func (c *conn) refuse(code packet.ReasonCode, reason string) bool {
	c.s.refused.Add(1)
	ack := &packet.Connack{ReasonCode: code}
	if c.version == packet.Version5 {
		ack.Properties.ReasonString = reason
	} else {
		ack.ReasonCode = packet.V3ConnackCode(code)
	}
	c.write(ack)
	return false
}

func newClientID() string {
	var b [12]byte
	rand.Read(b[:])
	return "karman-" + hex.EncodeToString(b[:])
}

// connect handles the CONNECT; false: refused, the connection ends.
func (c *conn) connect(cp *packet.Connect) bool {
	s := c.s
	v5 := cp.Version == packet.Version5
	if int(s.nConns.Load()) >= s.opts.MaxConnections {
		return c.refuse(packet.ServerBusy, "too many connections")
	}
	if v5 && cp.Properties.AuthMethod != "" {
		return c.refuse(packet.BadAuthenticationMethod, "no authentication method is supported")
	}
	id, assigned := cp.ClientID, false
	if id == "" {
		if !v5 && !cp.CleanStart {
			return c.refuse(packet.V3RefusedIdentifierRejected, "")
		}
		id, assigned = newClientID(), true
	}
	hooks := c.s.e.Hooks()
	if len(hooks.Authenticators) > 0 {
		cr := &hook.Credentials{Protocol: "mqtt", Addr: c.addr, Username: cp.Username, Password: cp.Password, ClientID: cp.ClientID}
		if tc, ok := c.nc.(interface{ ConnectionState() tls.ConnectionState }); ok {
			if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 && len(st.VerifiedChains[0]) > 0 {
				cr.Certificate = st.VerifiedChains[0][0]
			}
		}
		pr, err := hooks.Authenticate(c.ctx, cr)
		if err != nil {
			code := packet.NotAuthorized
			if errors.Is(err, hook.ErrUnauthenticated) {
				code = packet.BadUserNameOrPassword
			}
			return c.refuse(code, err.Error())
		}
		c.principal = pr
	}
	c.hookCtx = c.ctx
	if !hooks.Empty() {
		c.hookCtx = hook.NewContext(c.ctx, &hook.Client{Protocol: "mqtt", ID: id, Addr: c.addr, Principal: c.principal})
	}
	if w := cp.Will; w != nil {
		if badPayloadFormat(&w.Properties, w.Payload) {
			return c.refuse(packet.PayloadFormatInvalid, "the will payload is not UTF-8 as its format indicator says")
		}
		m := fromPublish(&packet.Publish{QoS: w.QoS, Retain: w.Retain, Topic: w.Topic, Payload: w.Payload, Properties: w.Properties}, id)
		first, _, err := mapping.Split(w.Topic)
		if err != nil || strings.HasPrefix(w.Topic, "$") {
			return c.refuse(packet.TopicNameInvalid, "the will topic cannot be stored: "+w.Topic)
		}
		// The will is a publish the client asks for now.
		if len(hooks.Authorizers) > 0 {
			err := hooks.Authorize(c.hookCtx, c.principal, hook.ActionPub, hook.Topic(first))
			if err == nil {
				err = hooks.Authorize(c.hookCtx, c.principal, hook.ActionPub, hook.MQTT(w.Topic))
			}
			if err != nil {
				return c.refuse(packet.NotAuthorized, "the will: "+err.Error())
			}
		}
		c.will, c.willDelay = m, w.Properties.WillDelay
	}

	// v3: clean session 0 persists for good; v5: as the expiry says.
	persist, expiry := !cp.CleanStart, uint32(neverExpires)
	if v5 {
		expiry = cp.Properties.SessionExpiry
		persist = expiry > 0
	}
	if !persist {
		expiry = 0
	}
	quota := s.opts.MaxInflight
	if v5 {
		if rm := int(cp.Properties.ReceiveMaximum); cp.Properties.Has(packet.PropReceiveMaximum) && rm < quota {
			quota = rm
		}
		c.clientMaxSize = int(cp.Properties.MaximumPacketSize)
		c.aliasOutMax = min(int(cp.Properties.TopicAliasMaximum), 1024)
		c.problemInfo = !cp.Properties.Has(packet.PropRequestProblemInfo) || cp.Properties.RequestProblemInfo != 0
	}
	c.credits = make(chan struct{}, quota)
	for range quota {
		c.credits <- struct{}{}
	}
	c.keepAlive = time.Duration(cp.KeepAlive) * time.Second
	serverKA := false
	if mx := s.opts.MaxKeepAlive; mx > 0 && (c.keepAlive == 0 || c.keepAlive > mx) {
		c.keepAlive, serverKA = mx, true
		if !v5 {
			serverKA = false
		}
	}

	var willOps []engine.StateOp
	if c.will != nil {
		willOps = append(willOps, willOp(id, c.will, c.willDelay))
	}
	ss, present, err := s.attach(c, id, cp.CleanStart, persist, expiry, willOps...)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return c.refuse(packet.ServerShuttingDown, "shutting down")
		}
		s.log.Warn("mqtt: attach session", "client", id, "err", err)
		return c.refuse(packet.ServerUnavailable, err.Error())
	}
	c.ss = ss
	ack := &packet.Connack{SessionPresent: present}
	if v5 {
		pr := &ack.Properties
		if assigned {
			pr.AssignedClientID = id
		}
		pr.ReceiveMaximum = uint16(min(s.opts.ReceiveMaximum, 65535))
		pr.MaximumPacketSize = uint32(s.opts.MaxPacketSize)
		pr.TopicAliasMaximum = uint16(s.opts.TopicAliasMaximum)
		if serverKA {
			pr.ServerKeepAlive = uint16(c.keepAlive / time.Second)
			pr.SetPresent(packet.PropServerKeepAlive)
		}
	}
	s.nConns.Add(1)
	if err := c.write(ack); err != nil {
		s.nConns.Add(-1)
		s.detach(c)
		return false
	}
	c.acked.Store(true)
	c.resume()
	return true
}

// readLoop handles packets until the connection ends (false), or until,
// after a wait of at least parkAfter, it is to wait again with nothing
// buffered: then it parks the decoder (its buffers go back to their
// pools) and returns true.
func (c *conn) readLoop() bool {
	for {
		waits := !c.dec.PacketBuffered()
		var start time.Time
		if waits {
			// The next Read waits for the client: what is queued goes
			// now, so a burst of PUBLISH packets costs one write of
			// acknowledgements; and the keep alive runs from here (a
			// packet in the buffer has arrived already).
			if c.commitReader() != nil || c.flush() != nil {
				return false
			}
			if c.keepAlive > 0 {
				c.nc.SetReadDeadline(time.Now().Add(c.keepAlive * 3 / 2))
			}
			if c.quiet && c.dec.Park() {
				switch ok, err := c.awaitBriefly(); {
				case err != nil:
					c.readFailed(err)
					return false
				case !ok:
					return true
				}
			}
			start = time.Now()
		}
		p, err := c.dec.Read()
		if err != nil {
			c.commitReader() // the state, at least, of what was handled
			c.readFailed(err)
			return false
		}
		if waits {
			c.quiet = time.Since(start) >= parkAfter
		}
		if !c.handle(p) {
			if c.commitReader() == nil {
				c.flush() // the acknowledgements before the end
			}
			return false
		}
	}
}

// awaitBriefly waits, in this goroutine, up to parkGrace for the first
// bytes of the next packet of a parked connection; false when none came
// (the read deadline is the keep alive's again) or the stream does not
// take a read that times out.
func (c *conn) awaitBriefly() (bool, error) {
	if !c.timeoutSafe {
		return false, nil
	}
	var ka time.Time
	if c.keepAlive > 0 {
		ka = time.Now().Add(c.keepAlive * 3 / 2)
	}
	d := time.Now().Add(parkGrace)
	if !ka.IsZero() && ka.Before(d) {
		d = ka
	}
	c.nc.SetReadDeadline(d)
	err := c.dec.Unpark()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && (ka.IsZero() || time.Now().Before(ka)) {
		c.nc.SetReadDeadline(ka)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.nc.SetReadDeadline(ka)
	return true, nil
}

// stage adds state changes to the reader's batch; sync: a promise the
// batch's answers make rests on them.
func (c *conn) stage(sync bool, ops ...engine.StateOp) {
	c.rops = append(c.rops, ops...)
	c.rsync = c.rsync || sync
}

// answer adds an acknowledgement to the reader's batch: it goes once the
// state staged before it is written.
func (c *conn) answer(p packet.Packet) bool {
	c.racks = append(c.racks, p)
	if len(c.racks) >= 256 { // a long burst: do not wait for its end
		return c.commitReader() == nil
	}
	return true
}

// commitReader writes the reader's staged state, then queues its
// answers; an error from the store withholds them and ends the
// connection (the client sends again what they would have answered).
func (c *conn) commitReader() error {
	// The answers are queued or dropped when this returns: the PUBACKs
	// in the publish batch's scratch are no longer needed.
	defer c.pubs.release()
	if err := c.storePublishes(); err != nil {
		clear(c.racks)
		c.racks = c.racks[:0]
		return err
	}
	if len(c.rops) > 0 {
		apply := c.s.st.Apply
		if c.rsync {
			apply = c.s.st.ApplySync
		}
		err := apply(c.rops...)
		clear(c.rops)
		c.rops, c.rsync = c.rops[:0], false
		if err != nil {
			c.s.log.Warn("mqtt: store session state", "client", c.ss.id, "err", err)
			c.racks = c.racks[:0]
			c.nc.Close()
			return err
		}
	}
	for i, p := range c.racks {
		if err := c.queue(p); err != nil {
			clear(c.racks)
			c.racks = c.racks[:0]
			return err
		}
		c.racks[i] = nil
	}
	c.racks = c.racks[:0]
	return nil
}

// readFailed answers a read that failed, when there is an answer.
func (c *conn) readFailed(err error) {
	var pe *packet.Error
	if errors.As(err, &pe) {
		c.disconnect(pe.Code, pe.Error())
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() && !c.takenOver.Load() && !c.revoked.Load() {
		c.disconnect(packet.KeepAliveTimeout, "")
	}
}

// disconnect sends a v5 DISCONNECT with code, after the reader's
// batch; v3 connections just close. Reader only.
func (c *conn) disconnect(code packet.ReasonCode, reason string) {
	if c.commitReader() != nil || c.version != packet.Version5 {
		return
	}
	d := &packet.Disconnect{ReasonCode: code}
	d.Properties.ReasonString = reason
	c.write(d)
}

// handle handles one packet; false ends the connection.
func (c *conn) handle(p packet.Packet) bool {
	switch p.(type) {
	case *packet.Publish, *packet.Puback, *packet.Pubrec, *packet.Pubcomp, *packet.Pingreq:
	default:
		// What follows may rest on the messages before it being
		// stored (a SUBSCRIBE's retained messages, a PUBREL's order).
		if c.storePublishes() != nil {
			return false
		}
	}
	switch p := p.(type) {
	case *packet.Publish:
		return c.handlePublish(p)
	case *packet.Puback:
		c.ss.acked(c, p.PacketID)
	case *packet.Pubrec:
		c.ss.received(c, p.PacketID, p.ReasonCode)
	case *packet.Pubcomp:
		c.ss.acked(c, p.PacketID)
	case *packet.Pubrel:
		return c.handlePubrel(p)
	case *packet.Subscribe:
		return c.handleSubscribe(p)
	case *packet.Unsubscribe:
		return c.handleUnsubscribe(p)
	case *packet.Pingreq:
		return c.answer(&packet.Pingresp{}) // after the answers before it
	case *packet.Disconnect:
		if c.version == packet.Version5 {
			if p.Properties.Has(packet.PropSessionExpiry) {
				c.ss.mu.Lock()
				was := c.ss.expiry
				if was == 0 && p.Properties.SessionExpiry != 0 {
					c.ss.mu.Unlock()
					c.disconnect(packet.ProtocolError, "session expiry cannot change from 0")
					return false
				}
				c.ss.expiry = p.Properties.SessionExpiry
				c.ss.persist.Store(c.ss.expiry > 0)
				c.ss.mu.Unlock()
			}
			if p.ReasonCode == packet.DisconnectWithWillMessage {
				return false
			}
		}
		c.clean.Store(true)
		return false
	default: // AUTH: never asked for
		c.disconnect(packet.ProtocolError, "unexpected "+p.Type().String())
		return false
	}
	return true
}

// badPayloadFormat reports whether a payload that its MQTT 5 Payload
// Format Indicator declares UTF-8 is not.
func badPayloadFormat(pr *packet.Properties, payload []byte) bool {
	return pr.Has(packet.PropPayloadFormat) && pr.PayloadFormat == 1 && !utf8.Valid(payload)
}

// fromPublish returns the application message of a PUBLISH (or will),
// copying what aliases the read buffer.
func fromPublish(p *packet.Publish, publisher string) *mapping.Message {
	m := new(mapping.Message)
	setFromPublish(m, p, publisher)
	m.Payload = append([]byte(nil), p.Payload...)
	return m
}

// setFromPublish sets m to the message of p, but for its payload.
func setFromPublish(m *mapping.Message, p *packet.Publish, publisher string) {
	*m = mapping.Message{Topic: p.Topic, QoS: p.QoS, Retain: p.Retain, Publisher: publisher}
	pr := &p.Properties
	if pr.Has(packet.PropPayloadFormat) {
		m.PayloadFormat, m.HasPayloadFormat = pr.PayloadFormat, true
	}
	if pr.MessageExpiry > 0 {
		m.ExpireAt = time.Now().Add(time.Duration(pr.MessageExpiry) * time.Second)
	}
	m.ContentType, m.ResponseTopic = pr.ContentType, pr.ResponseTopic
	if pr.Has(packet.PropCorrelationData) {
		m.CorrelationData = append([]byte{}, pr.CorrelationData...)
	}
	for _, u := range pr.UserProperties {
		m.UserProperties = append(m.UserProperties, mapping.UserProperty{Key: u.Key, Value: u.Value})
	}
}

func (c *conn) pubAck(p *packet.Publish, code packet.ReasonCode, reason ...string) bool {
	if c.version != packet.Version5 && code.IsError() {
		code = packet.Success // 3.1.1 has no negative acknowledgement
	}
	var props packet.Properties
	if code.IsError() && c.problemInfo && len(reason) > 0 {
		props.ReasonString = reason[0]
	}
	switch p.QoS {
	case 1:
		return c.answer(&packet.Puback{PacketID: p.PacketID, ReasonCode: code, Properties: props})
	case 2:
		return c.answer(&packet.Pubrec{PacketID: p.PacketID, ReasonCode: code, Properties: props})
	}
	return true
}

func (c *conn) handlePublish(p *packet.Publish) bool {
	s, v5 := c.s, c.version == packet.Version5
	if v5 && p.Properties.TopicAlias != 0 {
		a := p.Properties.TopicAlias
		if int(a) > s.opts.TopicAliasMaximum {
			c.disconnect(packet.TopicAliasInvalid, "topic alias above the maximum")
			return false
		}
		if c.aliasIn == nil {
			c.aliasIn = map[uint16]string{}
		}
		if p.Topic == "" {
			t, ok := c.aliasIn[a]
			if !ok {
				c.disconnect(packet.ProtocolError, "unknown topic alias")
				return false
			}
			p.Topic = t
		} else {
			c.aliasIn[a] = p.Topic
		}
	}
	if p.Topic == "" {
		c.disconnect(packet.ProtocolError, "empty topic")
		return false
	}
	if p.QoS == 2 {
		c.ss.mu.Lock()
		_, dup := c.ss.qos2In[p.PacketID]
		n := len(c.ss.qos2In)
		c.ss.mu.Unlock()
		if dup { // stored already: acknowledge again, store nothing
			return c.answer(&packet.Pubrec{PacketID: p.PacketID})
		}
		if n >= s.opts.ReceiveMaximum {
			c.disconnect(packet.ReceiveMaximumExceeded, "")
			return false
		}
	}
	if strings.HasPrefix(p.Topic, "$") {
		if !v5 {
			return false
		}
		return c.pubAck(p, packet.TopicNameInvalid, "clients do not publish to $ topics")
	}
	first, _, err := mapping.Split(p.Topic)
	if err != nil {
		if !v5 {
			return false
		}
		return c.pubAck(p, packet.TopicNameInvalid, err.Error())
	}
	if badPayloadFormat(&p.Properties, p.Payload) {
		// Checked, as the spec allows: subscribers that trust the
		// indicator get UTF-8. QoS 0 has no acknowledgement to refuse
		// with, so the connection ends with the reason.
		if p.QoS == 0 {
			c.disconnect(packet.PayloadFormatInvalid, "the payload is not UTF-8 as its format indicator says")
			return false
		}
		return c.pubAck(p, packet.PayloadFormatInvalid, "the payload is not UTF-8 as its format indicator says")
	}
	hooks := s.e.Hooks()
	if len(hooks.Authorizers) > 0 {
		err := hooks.Authorize(c.hookCtx, c.principal, hook.ActionPub, hook.Topic(first))
		if err == nil {
			err = hooks.Authorize(c.hookCtx, c.principal, hook.ActionPub, hook.MQTT(p.Topic))
		}
		if err != nil {
			return c.pubAck(p, packet.NotAuthorized, err.Error())
		}
	}
	s.bytesIn.Add(int64(len(p.Payload)))
	if p.QoS < 2 && !p.Retain {
		return c.batchPublish(p)
	}
	// Stored on its own, after the batch: a connection's messages are
	// stored in the order it sent them.
	if c.storePublishes() != nil {
		return false
	}
	if err := s.publish(c.hookCtx, fromPublish(p, c.ss.id)); err != nil {
		return c.publishFailed(p, err)
	}
	if p.QoS == 2 {
		c.ss.mu.Lock()
		c.ss.qos2In[p.PacketID] = struct{}{}
		persist := c.ss.persist.Load()
		c.ss.mu.Unlock()
		if persist {
			// On disk before PUBREC (a kill -9 must not lose it), in
			// the reader's batch.
			c.stage(true, engine.StateOp{Key: pidKey("q", c.ss.id, p.PacketID)})
		}
	}
	return c.pubAck(p, packet.Success)
}

// publishCode is the v5 reason code of a failed publish.
func publishCode(err error) packet.ReasonCode {
	switch {
	case errors.Is(err, mapping.ErrTopic), errors.Is(err, engine.ErrTopicNotFound), errors.Is(err, message.ErrInvalidName):
		return packet.TopicNameInvalid
	case errors.Is(err, engine.ErrDiskFull):
		return packet.QuotaExceeded
	case errors.Is(err, engine.ErrRejected), errors.Is(err, engine.ErrNoPermission):
		return packet.NotAuthorized
	case errors.Is(err, engine.ErrMessageTooLarge):
		// Packet Too Large (0x95) is not a PUBACK/PUBREC code: the
		// PUBLISH is valid, the server will not take it.
		return packet.ImplementationSpecificError
	}
	return packet.UnspecifiedError
}

func (c *conn) handlePubrel(p *packet.Pubrel) bool {
	ss := c.ss
	ss.mu.Lock()
	_, ok := ss.qos2In[p.PacketID]
	delete(ss.qos2In, p.PacketID)
	persist := ss.persist.Load()
	ss.mu.Unlock()
	code := packet.Success
	if !ok {
		code = packet.PacketIdentifierNotFound
		if c.version != packet.Version5 {
			code = packet.Success
		}
	} else if persist {
		c.stage(true, engine.StateOp{Key: pidKey("q", ss.id, p.PacketID), Delete: true})
	}
	return c.answer(&packet.Pubcomp{PacketID: p.PacketID, ReasonCode: code})
}

// teardown ends the connection's part in its session.
func (c *conn) teardown() {
	c.cancel()
	c.nc.Close()
	c.pumpWG.Wait()
	c.s.nConns.Add(-1)
	switch {
	case c.clean.Load():
		// A DISCONNECT ended it, also when the server began to stop
		// meanwhile: no will.
		c.s.deleteWill(c.ss.id)
	case c.will == nil:
	case c.stopping.Load():
		// The server stops: the connection ends without DISCONNECT, so
		// a will is due as at any such end [MQTT-3.1.2-8]: published
		// now when it has no delay or the session ends with the
		// connection; a delayed one stays stored and runs its delay
		// from now at the next start. The session is kept as it is.
		c.ss.mu.Lock()
		now := c.willDelay == 0 || !c.ss.persist.Load()
		c.ss.mu.Unlock()
		if now {
			c.s.publishWill(c.ss.id)
		}
	default:
		c.s.willAtEnd(c)
	}
	c.s.detach(c)
}

var _ = io.EOF
