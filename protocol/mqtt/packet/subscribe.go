package packet

import "strings"

// Subscription is one topic filter of a SUBSCRIBE with its options.
type Subscription struct {
	Filter            string
	QoS               byte // maximum QoS
	NoLocal           bool // MQTT 5
	RetainAsPublished bool // MQTT 5
	RetainHandling    byte // MQTT 5: 0 send, 1 only if new, 2 never
}

// Subscribe is a SUBSCRIBE packet (§3.8). The filters are not checked
// beyond UTF-8: a server answers a bad filter with a SUBACK code (MQTT 5)
// or closes (3.1.1), see package topic.
type Subscribe struct {
	PacketID      uint16
	Properties    Properties // MQTT 5: one subscription identifier, user properties
	Subscriptions []Subscription
}

// Type returns SUBSCRIBE.
func (*Subscribe) Type() Type { return SUBSCRIBE }

func decodeSubscribe(r *rd, p *Subscribe, version byte) *Error {
	var err *Error
	if p.PacketID, err = r.u16(); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocolErr("packet identifier 0")
	}
	if version == Version5 {
		if err := decodeProperties(r, &p.Properties, ctxSubscribe); err != nil {
			return err
		}
	}
	if r.left() == 0 {
		return protocolErr("no topic filters")
	}
	for r.left() > 0 {
		var s Subscription
		if s.Filter, err = r.string(); err != nil {
			return err
		}
		opts, err := r.byte()
		if err != nil {
			return err
		}
		s.QoS = opts & 3
		if version == Version5 {
			if opts&0xC0 != 0 {
				return malformed("reserved subscription option bits set")
			}
			s.NoLocal = opts&0x04 != 0
			s.RetainAsPublished = opts&0x08 != 0
			s.RetainHandling = (opts >> 4) & 3
			if s.QoS == 3 {
				return protocolErr("subscription QoS 3")
			}
			if s.RetainHandling == 3 {
				return protocolErr("retain handling 3")
			}
			if s.NoLocal && strings.HasPrefix(s.Filter, "$share/") {
				return protocolErr("no local on shared subscription %q", s.Filter)
			}
		} else {
			if opts&0xFC != 0 {
				return malformed("reserved subscription option bits set")
			}
			if s.QoS == 3 {
				return malformed("subscription QoS 3")
			}
		}
		p.Subscriptions = append(p.Subscriptions, s)
	}
	return nil
}

func (p *Subscribe) remaining(version byte) int {
	n := 2
	if version == Version5 {
		n += p.Properties.encodedLen()
	}
	for _, s := range p.Subscriptions {
		n += 3 + len(s.Filter)
	}
	return n
}

// Size returns the encoded size for version.
func (p *Subscribe) Size(version byte) int { return packetSize(p.remaining(version)) }

// AppendTo appends the packet. Options other than QoS are written only in
// MQTT 5.
func (p *Subscribe) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(SUBSCRIBE, "protocol level %d", version)
	}
	if p.PacketID == 0 {
		return dst, encodeErr(SUBSCRIBE, "packet identifier 0")
	}
	if len(p.Subscriptions) == 0 {
		return dst, encodeErr(SUBSCRIBE, "no topic filters")
	}
	if version == Version5 {
		if err := p.Properties.check(SUBSCRIBE, ctxSubscribe); err != nil {
			return dst, err
		}
	}
	for _, s := range p.Subscriptions {
		if s.QoS > 2 || s.RetainHandling > 2 || len(s.Filter) > 65535 {
			return dst, encodeErr(SUBSCRIBE, "bad subscription %q", s.Filter)
		}
	}
	rl := p.remaining(version)
	if rl > MaxRemainingLength {
		return dst, encodeErr(SUBSCRIBE, "remaining length %d too large", rl)
	}
	dst = appendHeader(dst, byte(SUBSCRIBE)<<4|0x02, rl)
	dst = appendU16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendProps(dst)
	}
	for _, s := range p.Subscriptions {
		dst = appendString(dst, s.Filter)
		opts := s.QoS
		if version == Version5 {
			if s.NoLocal {
				opts |= 0x04
			}
			if s.RetainAsPublished {
				opts |= 0x08
			}
			opts |= s.RetainHandling << 4
		}
		dst = append(dst, opts)
	}
	return dst, nil
}

// Suback is a SUBACK packet (§3.9): one code per filter, in order.
type Suback struct {
	PacketID    uint16
	Properties  Properties // MQTT 5: reason string, user properties
	ReasonCodes []ReasonCode
}

// Type returns SUBACK.
func (*Suback) Type() Type { return SUBACK }

func decodeSuback(r *rd, p *Suback, version byte) *Error {
	var err *Error
	if p.PacketID, err = r.u16(); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocolErr("packet identifier 0")
	}
	codes := &v3SubackCodes
	if version == Version5 {
		if err := decodeProperties(r, &p.Properties, ctxAck); err != nil {
			return err
		}
		codes = &subackCodes
	}
	if r.left() == 0 {
		return protocolErr("no reason codes")
	}
	p.ReasonCodes = make([]ReasonCode, r.left())
	for i := range p.ReasonCodes {
		c := ReasonCode(r.b[r.i+i])
		if !codes.has(c) {
			return malformed("reason code 0x%02x not allowed in SUBACK", byte(c))
		}
		p.ReasonCodes[i] = c
	}
	r.i = len(r.b)
	return nil
}

func (p *Suback) remaining(version byte) int {
	n := 2 + len(p.ReasonCodes)
	if version == Version5 {
		n += p.Properties.encodedLen()
	}
	return n
}

// Size returns the encoded size for version.
func (p *Suback) Size(version byte) int { return packetSize(p.remaining(version)) }

// AppendTo appends the packet. Before MQTT 5, failure codes become 0x80.
func (p *Suback) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(SUBACK, "protocol level %d", version)
	}
	if p.PacketID == 0 {
		return dst, encodeErr(SUBACK, "packet identifier 0")
	}
	if len(p.ReasonCodes) == 0 {
		return dst, encodeErr(SUBACK, "no reason codes")
	}
	if version == Version5 {
		if err := p.Properties.check(SUBACK, ctxAck); err != nil {
			return dst, err
		}
	}
	rl := p.remaining(version)
	if rl > MaxRemainingLength {
		return dst, encodeErr(SUBACK, "remaining length %d too large", rl)
	}
	dst = appendHeader(dst, byte(SUBACK)<<4, rl)
	dst = appendU16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendProps(dst)
	}
	for _, c := range p.ReasonCodes {
		if version != Version5 && c > GrantedQoS2 {
			c = V3SubackFailure
		}
		dst = append(dst, byte(c))
	}
	return dst, nil
}

// Unsubscribe is an UNSUBSCRIBE packet (§3.10).
type Unsubscribe struct {
	PacketID   uint16
	Properties Properties // MQTT 5: user properties
	Filters    []string
}

// Type returns UNSUBSCRIBE.
func (*Unsubscribe) Type() Type { return UNSUBSCRIBE }

func decodeUnsubscribe(r *rd, p *Unsubscribe, version byte) *Error {
	var err *Error
	if p.PacketID, err = r.u16(); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocolErr("packet identifier 0")
	}
	if version == Version5 {
		if err := decodeProperties(r, &p.Properties, ctxUnsubscribe); err != nil {
			return err
		}
	}
	if r.left() == 0 {
		return protocolErr("no topic filters")
	}
	for r.left() > 0 {
		f, err := r.string()
		if err != nil {
			return err
		}
		p.Filters = append(p.Filters, f)
	}
	return nil
}

func (p *Unsubscribe) remaining(version byte) int {
	n := 2
	if version == Version5 {
		n += p.Properties.encodedLen()
	}
	for _, f := range p.Filters {
		n += 2 + len(f)
	}
	return n
}

// Size returns the encoded size for version.
func (p *Unsubscribe) Size(version byte) int { return packetSize(p.remaining(version)) }

// AppendTo appends the packet.
func (p *Unsubscribe) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(UNSUBSCRIBE, "protocol level %d", version)
	}
	if p.PacketID == 0 {
		return dst, encodeErr(UNSUBSCRIBE, "packet identifier 0")
	}
	if len(p.Filters) == 0 {
		return dst, encodeErr(UNSUBSCRIBE, "no topic filters")
	}
	if version == Version5 {
		if err := p.Properties.check(UNSUBSCRIBE, ctxUnsubscribe); err != nil {
			return dst, err
		}
	}
	for _, f := range p.Filters {
		if len(f) > 65535 {
			return dst, encodeErr(UNSUBSCRIBE, "filter longer than 65,535 bytes")
		}
	}
	rl := p.remaining(version)
	if rl > MaxRemainingLength {
		return dst, encodeErr(UNSUBSCRIBE, "remaining length %d too large", rl)
	}
	dst = appendHeader(dst, byte(UNSUBSCRIBE)<<4|0x02, rl)
	dst = appendU16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendProps(dst)
	}
	for _, f := range p.Filters {
		dst = appendString(dst, f)
	}
	return dst, nil
}

// Unsuback is an UNSUBACK packet (§3.11). Before MQTT 5 it has no
// properties and no reason codes.
type Unsuback struct {
	PacketID    uint16
	Properties  Properties
	ReasonCodes []ReasonCode // MQTT 5: one per filter
}

// Type returns UNSUBACK.
func (*Unsuback) Type() Type { return UNSUBACK }

func decodeUnsuback(r *rd, p *Unsuback, version byte) *Error {
	var err *Error
	if p.PacketID, err = r.u16(); err != nil {
		return err
	}
	if p.PacketID == 0 {
		return protocolErr("packet identifier 0")
	}
	if version != Version5 {
		if r.left() != 0 {
			return malformed("%d trailing bytes", r.left())
		}
		return nil
	}
	if err := decodeProperties(r, &p.Properties, ctxAck); err != nil {
		return err
	}
	if r.left() == 0 {
		return protocolErr("no reason codes")
	}
	p.ReasonCodes = make([]ReasonCode, r.left())
	for i := range p.ReasonCodes {
		c := ReasonCode(r.b[r.i+i])
		if !unsubackCodes.has(c) {
			return malformed("reason code 0x%02x not allowed in UNSUBACK", byte(c))
		}
		p.ReasonCodes[i] = c
	}
	r.i = len(r.b)
	return nil
}

func (p *Unsuback) remaining(version byte) int {
	if version != Version5 {
		return 2
	}
	return 2 + p.Properties.encodedLen() + len(p.ReasonCodes)
}

// Size returns the encoded size for version.
func (p *Unsuback) Size(version byte) int { return packetSize(p.remaining(version)) }

// AppendTo appends the packet; before MQTT 5 only the packet id.
func (p *Unsuback) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(UNSUBACK, "protocol level %d", version)
	}
	if p.PacketID == 0 {
		return dst, encodeErr(UNSUBACK, "packet identifier 0")
	}
	if version == Version5 {
		if len(p.ReasonCodes) == 0 {
			return dst, encodeErr(UNSUBACK, "no reason codes")
		}
		if err := p.Properties.check(UNSUBACK, ctxAck); err != nil {
			return dst, err
		}
	}
	rl := p.remaining(version)
	if rl > MaxRemainingLength {
		return dst, encodeErr(UNSUBACK, "remaining length %d too large", rl)
	}
	dst = appendHeader(dst, byte(UNSUBACK)<<4, rl)
	dst = appendU16(dst, p.PacketID)
	if version == Version5 {
		dst = p.Properties.appendProps(dst)
		for _, c := range p.ReasonCodes {
			dst = append(dst, byte(c))
		}
	}
	return dst, nil
}
