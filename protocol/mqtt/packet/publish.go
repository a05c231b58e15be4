package packet

import "strconv"

// Publish is a PUBLISH packet (§3.3).
type Publish struct {
	Dup        bool
	QoS        byte
	Retain     bool
	Topic      string // empty in MQTT 5 when Properties.TopicAlias names it
	PacketID   uint16 // QoS 1 and 2 only
	Properties Properties
	Payload    []byte // aliases the read buffer; may be empty
}

// Type returns PUBLISH.
func (*Publish) Type() Type { return PUBLISH }

func decodePublish(r *rd, p *Publish, flags, version byte) *Error {
	p.Dup = flags&0x08 != 0
	p.QoS = (flags >> 1) & 3
	p.Retain = flags&0x01 != 0
	if p.QoS == 3 {
		return malformed("QoS 3")
	}
	if p.Dup && p.QoS == 0 {
		return malformed("DUP set on QoS 0")
	}
	topic, err := r.stringBytes()
	if err != nil {
		return err
	}
	if !validTopicName(string(topic)) {
		return &Error{Err: ErrTopicNameInvalid, Code: TopicNameInvalid, Detail: "wildcard in topic name " + quote(topic)}
	}
	if p.QoS > 0 {
		if p.PacketID, err = r.u16(); err != nil {
			return err
		}
		if p.PacketID == 0 {
			return protocolErr("packet identifier 0")
		}
	}
	if version == Version5 {
		if err := decodeProperties(r, &p.Properties, ctxPublish); err != nil {
			return err
		}
	}
	if len(topic) == 0 && (version != Version5 || !p.Properties.Has(PropTopicAlias)) {
		if version == Version5 {
			return protocolErr("empty topic name without topic alias")
		}
		return &Error{Err: ErrTopicNameInvalid, Code: TopicNameInvalid, Detail: "empty topic name"}
	}
	if p.Topic != string(topic) { // a reused packet keeps its topic's string
		p.Topic = string(topic)
	}
	p.Payload = r.b[r.i:len(r.b):len(r.b)]
	r.i = len(r.b)
	return nil
}

func (p *Publish) remaining(version byte) int {
	n := 2 + len(p.Topic) + len(p.Payload)
	if p.QoS > 0 {
		n += 2
	}
	if version == Version5 {
		n += p.Properties.encodedLen()
	}
	return n
}

// Size returns the encoded size for version.
func (p *Publish) Size(version byte) int { return packetSize(p.remaining(version)) }

// AppendTo appends the packet. Properties are written only in MQTT 5.
func (p *Publish) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(PUBLISH, "protocol level %d", version)
	}
	if p.QoS > 2 {
		return dst, encodeErr(PUBLISH, "QoS %d", p.QoS)
	}
	if p.QoS > 0 && p.PacketID == 0 {
		return dst, encodeErr(PUBLISH, "packet identifier 0 with QoS %d", p.QoS)
	}
	if p.Dup && p.QoS == 0 {
		return dst, encodeErr(PUBLISH, "DUP on QoS 0")
	}
	if len(p.Topic) > 65535 {
		return dst, encodeErr(PUBLISH, "topic longer than 65,535 bytes")
	}
	if p.Topic == "" && (version != Version5 || !p.Properties.Has(PropTopicAlias)) {
		return dst, encodeErr(PUBLISH, "empty topic without topic alias")
	}
	if version == Version5 {
		if err := p.Properties.check(PUBLISH, ctxPublish); err != nil {
			return dst, err
		}
	}
	rl := p.remaining(version)
	if rl > MaxRemainingLength {
		return dst, encodeErr(PUBLISH, "remaining length %d too large", rl)
	}
	first := byte(PUBLISH)<<4 | p.QoS<<1
	if p.Dup {
		first |= 0x08
	}
	if p.Retain {
		first |= 0x01
	}
	dst = appendHeader(dst, first, rl)
	dst = appendString(dst, p.Topic)
	if p.QoS > 0 {
		dst = appendU16(dst, p.PacketID)
	}
	if version == Version5 {
		dst = p.Properties.appendProps(dst)
	}
	return append(dst, p.Payload...), nil
}

// Puback is a PUBACK packet (§3.4), the answer to a QoS 1 PUBLISH.
type Puback struct {
	PacketID   uint16
	ReasonCode ReasonCode // MQTT 5
	Properties Properties // MQTT 5: reason string and user properties
}

// Pubrec is a PUBREC packet (§3.5), the first answer to a QoS 2 PUBLISH.
type Pubrec struct {
	PacketID   uint16
	ReasonCode ReasonCode
	Properties Properties
}

// Pubrel is a PUBREL packet (§3.6), the answer to a PUBREC.
type Pubrel struct {
	PacketID   uint16
	ReasonCode ReasonCode
	Properties Properties
}

// Pubcomp is a PUBCOMP packet (§3.7), the answer to a PUBREL.
type Pubcomp struct {
	PacketID   uint16
	ReasonCode ReasonCode
	Properties Properties
}

// Type returns PUBACK.
func (*Puback) Type() Type { return PUBACK }

// Type returns PUBREC.
func (*Pubrec) Type() Type { return PUBREC }

// Type returns PUBREL.
func (*Pubrel) Type() Type { return PUBREL }

// Type returns PUBCOMP.
func (*Pubcomp) Type() Type { return PUBCOMP }

// Size returns the encoded size for version.
func (p *Puback) Size(version byte) int { return ackSize(p.ReasonCode, &p.Properties, version) }

// Size returns the encoded size for version.
func (p *Pubrec) Size(version byte) int { return ackSize(p.ReasonCode, &p.Properties, version) }

// Size returns the encoded size for version.
func (p *Pubrel) Size(version byte) int { return ackSize(p.ReasonCode, &p.Properties, version) }

// Size returns the encoded size for version.
func (p *Pubcomp) Size(version byte) int { return ackSize(p.ReasonCode, &p.Properties, version) }

// AppendTo appends the packet; before MQTT 5 only the packet id is written.
func (p *Puback) AppendTo(dst []byte, version byte) ([]byte, error) {
	return appendAck(dst, PUBACK, p.PacketID, p.ReasonCode, &p.Properties, version)
}

// AppendTo appends the packet; before MQTT 5 only the packet id is written.
func (p *Pubrec) AppendTo(dst []byte, version byte) ([]byte, error) {
	return appendAck(dst, PUBREC, p.PacketID, p.ReasonCode, &p.Properties, version)
}

// AppendTo appends the packet; before MQTT 5 only the packet id is written.
func (p *Pubrel) AppendTo(dst []byte, version byte) ([]byte, error) {
	return appendAck(dst, PUBREL, p.PacketID, p.ReasonCode, &p.Properties, version)
}

// AppendTo appends the packet; before MQTT 5 only the packet id is written.
func (p *Pubcomp) AppendTo(dst []byte, version byte) ([]byte, error) {
	return appendAck(dst, PUBCOMP, p.PacketID, p.ReasonCode, &p.Properties, version)
}

// ackRemaining uses the short forms: 2 bytes for success without
// properties, 3 for a code without properties.
func ackRemaining(rc ReasonCode, props *Properties, version byte) int {
	if version != Version5 {
		return 2
	}
	pl := props.propsLen()
	switch {
	case pl > 0:
		return 3 + varintLen(pl) + pl
	case rc != Success:
		return 3
	}
	return 2
}

func ackSize(rc ReasonCode, props *Properties, version byte) int {
	return packetSize(ackRemaining(rc, props, version))
}

func appendAck(dst []byte, t Type, id uint16, rc ReasonCode, props *Properties, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(t, "protocol level %d", version)
	}
	if id == 0 {
		return dst, encodeErr(t, "packet identifier 0")
	}
	if version == Version5 {
		if err := props.check(t, ctxAck); err != nil {
			return dst, err
		}
	}
	first := byte(t) << 4
	if t == PUBREL {
		first |= 0x02
	}
	rl := ackRemaining(rc, props, version)
	dst = appendHeader(dst, first, rl)
	dst = appendU16(dst, id)
	if rl >= 3 {
		dst = append(dst, byte(rc))
	}
	if rl > 3 {
		dst = props.appendProps(dst)
	}
	return dst, nil
}

func decodeAck(r *rd, t Type, id *uint16, rc *ReasonCode, props *Properties, version byte) *Error {
	var err *Error
	if *id, err = r.u16(); err != nil {
		return err
	}
	if *id == 0 {
		return protocolErr("packet identifier 0")
	}
	if version == Version5 && r.left() > 0 {
		c, _ := r.byte()
		*rc = ReasonCode(c)
		codes := &pubackCodes
		if t == PUBREL || t == PUBCOMP {
			codes = &pubrelCodes
		}
		if !codes.has(*rc) {
			return malformed("reason code 0x%02x not allowed", c)
		}
		if r.left() > 0 {
			if err := decodeProperties(r, props, ctxAck); err != nil {
				return err
			}
		}
	}
	if r.left() != 0 {
		return malformed("%d trailing bytes", r.left())
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// quote quotes at most 64 bytes of b for an error message.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

// Clone returns a deep copy of p: the payload, correlation data, user
// properties and subscription identifiers are copied, so the copy
// outlives the Decoder buffer p may alias.
func (p *Publish) Clone() *Publish {
	c := *p
	c.Payload = clone(p.Payload)
	c.Properties = p.Properties.Clone()
	return &c
}

// Clone returns a deep copy of the properties.
func (p *Properties) Clone() Properties {
	c := *p
	c.CorrelationData = clone(p.CorrelationData)
	c.AuthData = clone(p.AuthData)
	if p.SubscriptionIdentifiers != nil {
		c.SubscriptionIdentifiers = append([]int(nil), p.SubscriptionIdentifiers...)
	}
	if p.UserProperties != nil {
		c.UserProperties = append([]UserProperty(nil), p.UserProperties...)
	}
	return c
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// Publish returns the PUBLISH a will becomes when it is published: its
// topic, QoS, retain flag and payload (copied), and of its properties
// those a PUBLISH carries, user properties in order (MQTT 5 §3.1.3.2);
// the Will Delay Interval stays behind.
func (w *Will) Publish() *Publish {
	props := w.Properties.Clone()
	props.WillDelay = 0
	props.ClearPresent(PropWillDelay)
	return &Publish{Topic: w.Topic, QoS: w.QoS, Retain: w.Retain, Payload: clone(w.Payload), Properties: props}
}
