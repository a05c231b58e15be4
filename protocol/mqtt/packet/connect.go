package packet

// Connect is a CONNECT packet (§3.1). Its Version is the protocol level it
// carries; it is decoded and encoded in that level whatever version the
// caller passes.
type Connect struct {
	Version    byte   // Version31, Version311 or Version5
	CleanStart bool   // Clean Session in 3.1.1
	KeepAlive  uint16 // seconds, 0 off
	Properties Properties
	ClientID   string // may be empty
	Will       *Will  // nil without a will

	UsernameFlag bool
	Username     string
	PasswordFlag bool
	Password     []byte // aliases the read buffer
}

// Will is the will message of a CONNECT.
type Will struct {
	QoS        byte
	Retain     bool
	Properties Properties // MQTT 5 will properties
	Topic      string
	Payload    []byte // aliases the read buffer
}

// Type returns CONNECT.
func (*Connect) Type() Type { return CONNECT }

// ProtocolName returns the protocol name written for a level: "MQIsdp"
// for 3.1, "MQTT" otherwise.
func ProtocolName(version byte) string {
	if version == Version31 {
		return "MQIsdp"
	}
	return "MQTT"
}

func decodeConnect(r *rd, p *Connect) *Error {
	name, err := r.stringBytes()
	if err != nil {
		return err
	}
	level, err := r.byte()
	if err != nil {
		return err
	}
	switch {
	case string(name) == "MQTT" && (level == Version311 || level == Version5),
		string(name) == "MQIsdp" && level == Version31:
	case string(name) == "MQTT" || string(name) == "MQIsdp":
		return &Error{Err: ErrUnsupportedVersion, Code: UnsupportedProtocolVersion, Version: level,
			Detail: "protocol level " + itoa(int(level)) + " with name " + string(name)}
	default:
		return &Error{Err: ErrUnsupportedVersion, Code: UnsupportedProtocolVersion,
			Detail: "unknown protocol name " + quote(name)}
	}
	p.Version = level
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags&0x01 != 0 {
		return malformed("reserved connect flag set")
	}
	p.CleanStart = flags&0x02 != 0
	willFlag := flags&0x04 != 0
	willQoS := (flags >> 3) & 3
	willRetain := flags&0x20 != 0
	p.PasswordFlag = flags&0x40 != 0
	p.UsernameFlag = flags&0x80 != 0
	if !willFlag && (willQoS != 0 || willRetain) {
		return malformed("will QoS or retain set without will flag")
	}
	if willQoS == 3 {
		return malformed("will QoS 3")
	}
	if level != Version5 && p.PasswordFlag && !p.UsernameFlag {
		return protocolErr("password without user name")
	}
	if p.KeepAlive, err = r.u16(); err != nil {
		return err
	}
	if level == Version5 {
		if err := decodeProperties(r, &p.Properties, ctxConnect); err != nil {
			return err
		}
	}
	if p.ClientID, err = r.string(); err != nil {
		return err
	}
	if willFlag {
		w := &Will{QoS: willQoS, Retain: willRetain}
		if level == Version5 {
			if err := decodeProperties(r, &w.Properties, ctxWill); err != nil {
				return err
			}
		}
		if w.Topic, err = r.string(); err != nil {
			return err
		}
		if w.Topic == "" || !validTopicName(w.Topic) {
			return &Error{Err: ErrTopicNameInvalid, Code: TopicNameInvalid, Detail: "will topic " + quote([]byte(w.Topic))}
		}
		if w.Payload, err = r.binary(); err != nil {
			return err
		}
		p.Will = w
	}
	if p.UsernameFlag {
		if p.Username, err = r.string(); err != nil {
			return err
		}
	}
	if p.PasswordFlag {
		if p.Password, err = r.binary(); err != nil {
			return err
		}
	}
	if r.left() != 0 {
		return malformed("%d trailing bytes", r.left())
	}
	return nil
}

func (p *Connect) remaining() int {
	n := 2 + len(ProtocolName(p.Version)) + 1 + 1 + 2 + 2 + len(p.ClientID)
	if p.Version == Version5 {
		n += p.Properties.encodedLen()
	}
	if w := p.Will; w != nil {
		n += 4 + len(w.Topic) + len(w.Payload)
		if p.Version == Version5 {
			n += w.Properties.encodedLen()
		}
	}
	if p.UsernameFlag {
		n += 2 + len(p.Username)
	}
	if p.PasswordFlag {
		n += 2 + len(p.Password)
	}
	return n
}

// Size returns the encoded size; version is ignored (see Connect).
func (p *Connect) Size(version byte) int { return packetSize(p.remaining()) }

// AppendTo appends the packet in p.Version; version is ignored.
func (p *Connect) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(p.Version) {
		return dst, encodeErr(CONNECT, "protocol level %d", p.Version)
	}
	if len(p.ClientID) > 65535 || len(p.Username) > 65535 || len(p.Password) > 65535 {
		return dst, encodeErr(CONNECT, "field longer than 65,535 bytes")
	}
	if p.Version != Version5 && p.PasswordFlag && !p.UsernameFlag {
		return dst, encodeErr(CONNECT, "password without user name before MQTT 5")
	}
	if p.Version == Version5 {
		if err := p.Properties.check(CONNECT, ctxConnect); err != nil {
			return dst, err
		}
	}
	var flags byte
	if p.CleanStart {
		flags |= 0x02
	}
	if w := p.Will; w != nil {
		if w.QoS > 2 {
			return dst, encodeErr(CONNECT, "will QoS %d", w.QoS)
		}
		if len(w.Topic) > 65535 || len(w.Payload) > 65535 {
			return dst, encodeErr(CONNECT, "will longer than 65,535 bytes")
		}
		if p.Version == Version5 {
			if err := w.Properties.check(CONNECT, ctxWill); err != nil {
				return dst, err
			}
		}
		flags |= 0x04 | w.QoS<<3
		if w.Retain {
			flags |= 0x20
		}
	}
	if p.PasswordFlag {
		flags |= 0x40
	}
	if p.UsernameFlag {
		flags |= 0x80
	}
	rl := p.remaining()
	if rl > MaxRemainingLength {
		return dst, encodeErr(CONNECT, "remaining length %d too large", rl)
	}
	dst = appendHeader(dst, byte(CONNECT)<<4, rl)
	dst = appendString(dst, ProtocolName(p.Version))
	dst = append(dst, p.Version, flags)
	dst = appendU16(dst, p.KeepAlive)
	if p.Version == Version5 {
		dst = p.Properties.appendProps(dst)
	}
	dst = appendString(dst, p.ClientID)
	if w := p.Will; w != nil {
		if p.Version == Version5 {
			dst = w.Properties.appendProps(dst)
		}
		dst = appendString(dst, w.Topic)
		dst = appendBinary(dst, w.Payload)
	}
	if p.UsernameFlag {
		dst = appendString(dst, p.Username)
	}
	if p.PasswordFlag {
		dst = appendBinary(dst, p.Password)
	}
	return dst, nil
}

// Connack is a CONNACK packet (§3.2). In 3.1.1 ReasonCode holds the return
// code (0–5, see the V3 constants) and there are no properties.
type Connack struct {
	SessionPresent bool
	ReasonCode     ReasonCode
	Properties     Properties
}

// Type returns CONNACK.
func (*Connack) Type() Type { return CONNACK }

func decodeConnack(r *rd, p *Connack, version byte) *Error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags&^1 != 0 {
		return malformed("reserved connack flags set")
	}
	p.SessionPresent = flags == 1
	rc, err := r.byte()
	if err != nil {
		return err
	}
	p.ReasonCode = ReasonCode(rc)
	if version == Version5 {
		if !connackCodes.has(p.ReasonCode) {
			return malformed("reason code 0x%02x not allowed in CONNACK", rc)
		}
		if err := decodeProperties(r, &p.Properties, ctxConnack); err != nil {
			return err
		}
	} else if !v3ConnackCodes.has(p.ReasonCode) {
		return malformed("return code %d", rc)
	}
	if p.SessionPresent && p.ReasonCode != 0 {
		return protocolErr("session present with a refusal")
	}
	if r.left() != 0 {
		return malformed("%d trailing bytes", r.left())
	}
	return nil
}

func (p *Connack) remaining(version byte) int {
	if version == Version5 {
		return 2 + p.Properties.encodedLen()
	}
	return 2
}

// Size returns the encoded size for version.
func (p *Connack) Size(version byte) int { return packetSize(p.remaining(version)) }

// AppendTo appends the packet. In 3.1.1 a code above 5 is mapped with
// V3ConnackCode and the properties are left out.
func (p *Connack) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(CONNACK, "protocol level %d", version)
	}
	rc := p.ReasonCode
	if version == Version5 {
		if err := p.Properties.check(CONNACK, ctxConnack); err != nil {
			return dst, err
		}
	} else {
		rc = V3ConnackCode(rc)
	}
	var flags byte
	if p.SessionPresent {
		flags = 1
	}
	dst = appendHeader(dst, byte(CONNACK)<<4, p.remaining(version))
	dst = append(dst, flags, byte(rc))
	if version == Version5 {
		dst = p.Properties.appendProps(dst)
	}
	return dst, nil
}
