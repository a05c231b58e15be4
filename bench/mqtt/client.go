package mqtt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// DialOptions says how a connection introduces itself.
type DialOptions struct {
	ClientID  string
	Version   byte   // packet.Version311 or packet.Version5; 0 means 5
	KeepAlive uint16 // seconds; 0 off
	// LocalIP, when set, is the source address (127.0.0.x spreads many
	// connections over more ephemeral ports).
	LocalIP net.IP
}

// Conn is one MQTT client connection of the load generator: CONNECT and
// SUBSCRIBE are synchronous; after Start a read goroutine hands PUBLISH
// packets to a handler (acknowledging QoS 1 ones) and PUBACKs to the
// publisher's window. Writes are safe from several goroutines.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	dec     *packet.Decoder
	version byte

	wmu sync.Mutex
	w   *bufio.Writer
	buf []byte
	pub packet.Publish // reused by Publish under wmu

	acks chan struct{} // one token per outstanding QoS 1 PUBLISH
	done chan struct{}
	err  error
}

// ErrRefused reports a CONNACK or SUBACK refusal.
var ErrRefused = errors.New("mqtt: refused")

// Dial connects, sends CONNECT and waits for the CONNACK.
func Dial(ctx context.Context, addr string, o DialOptions) (*Conn, error) {
	if o.Version == 0 {
		o.Version = packet.Version5
	}
	d := net.Dialer{}
	if o.LocalIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: o.LocalIP}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 32<<10), w: bufio.NewWriterSize(nc, 32<<10), version: o.Version,
		done: make(chan struct{})}
	c.dec = packet.NewDecoder(c.r)
	c.dec.Version = o.Version
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	connect := &packet.Connect{Version: o.Version, CleanStart: true, KeepAlive: o.KeepAlive, ClientID: o.ClientID}
	if err := c.write(connect, true); err != nil {
		nc.Close()
		return nil, err
	}
	p, err := c.dec.Read()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("mqtt: reading CONNACK: %w", err)
	}
	ack, ok := p.(*packet.Connack)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("mqtt: %s instead of CONNACK", p.Type())
	}
	if ack.ReasonCode != packet.Success {
		nc.Close()
		return nil, fmt.Errorf("%w: CONNACK %s", ErrRefused, ack.ReasonCode)
	}
	return c, nil
}

func (c *Conn) write(p packet.Packet, flush bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var err error
	if c.buf, err = p.AppendTo(c.buf[:0], c.version); err != nil {
		return err
	}
	if _, err = c.w.Write(c.buf); err == nil && flush {
		err = c.w.Flush()
	}
	return err
}

// Subscribe subscribes to filter and waits for the SUBACK; call it before
// Start.
func (c *Conn) Subscribe(ctx context.Context, filter string, qos byte) error {
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
		defer c.nc.SetDeadline(time.Time{})
	}
	sub := &packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: filter, QoS: qos}}}
	if err := c.write(sub, true); err != nil {
		return err
	}
	for {
		p, err := c.dec.Read()
		if err != nil {
			return fmt.Errorf("mqtt: reading SUBACK: %w", err)
		}
		if ack, ok := p.(*packet.Suback); ok {
			if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] > packet.GrantedQoS2 {
				return fmt.Errorf("%w: SUBACK %v for %q", ErrRefused, ack.ReasonCodes, filter)
			}
			return nil
		}
		// Retained messages may arrive before the SUBACK; skip them.
	}
}

// Start runs the read loop: onPublish gets every PUBLISH (its payload is
// valid only during the call), QoS 1 ones are acknowledged, PUBACKs free
// the publisher window of Publish. window is the number of QoS 1 PUBLISH
// packets Publish keeps outstanding.
func (c *Conn) Start(window int, onPublish func(p *packet.Publish)) {
	if window < 1 {
		window = 1
	}
	c.acks = make(chan struct{}, window)
	go c.readLoop(onPublish)
}

func (c *Conn) readLoop(onPublish func(p *packet.Publish)) {
	defer close(c.done)
	for {
		p, err := c.dec.Read()
		if err == nil {
			err = packet.CheckFromServer(p, c.version)
		}
		if err != nil {
			c.err = err
			return
		}
		switch p := p.(type) {
		case *packet.Publish:
			if onPublish != nil {
				onPublish(p)
			}
			if p.QoS == 1 {
				// Acks are flushed once the read buffer is drained, so a
				// burst of deliveries costs one write.
				if err := c.write(&packet.Puback{PacketID: p.PacketID}, c.r.Buffered() == 0); err != nil {
					c.err = err
					return
				}
			}
		case *packet.Puback:
			select {
			case <-c.acks:
			default:
			}
		}
	}
}

// Publish sends one message, waiting first for room in the QoS 1 window.
func (c *Conn) Publish(ctx context.Context, topic string, qos byte, id uint16, payload []byte) error {
	if qos > 0 {
		select {
		case c.acks <- struct{}{}:
		case <-c.done:
			return fmt.Errorf("mqtt: connection ended: %v", c.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.pub = packet.Publish{Topic: topic, QoS: qos, PacketID: id, Payload: payload}
	var err error
	if c.buf, err = c.pub.AppendTo(c.buf[:0], c.version); err != nil {
		return err
	}
	if _, err = c.w.Write(c.buf); err == nil {
		err = c.w.Flush()
	}
	return err
}

// Drain waits until every QoS 1 PUBLISH sent is acknowledged.
func (c *Conn) Drain(ctx context.Context) error {
	for i := 0; i < cap(c.acks); i++ {
		select {
		case c.acks <- struct{}{}:
		case <-c.done:
			return fmt.Errorf("mqtt: connection ended: %v", c.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := 0; i < cap(c.acks); i++ {
		<-c.acks
	}
	return nil
}

// Close sends DISCONNECT and closes the connection.
func (c *Conn) Close() error {
	_ = c.write(&packet.Disconnect{}, true)
	err := c.nc.Close()
	if c.acks != nil {
		<-c.done
	}
	return err
}
