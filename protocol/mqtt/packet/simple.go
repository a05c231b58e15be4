package packet

// Pingreq is a PINGREQ packet (§3.12).
type Pingreq struct{}

// Pingresp is a PINGRESP packet (§3.13).
type Pingresp struct{}

// Type returns PINGREQ.
func (*Pingreq) Type() Type { return PINGREQ }

// Type returns PINGRESP.
func (*Pingresp) Type() Type { return PINGRESP }

// Size returns 2.
func (*Pingreq) Size(byte) int { return 2 }

// Size returns 2.
func (*Pingresp) Size(byte) int { return 2 }

// AppendTo appends the two bytes of the packet.
func (*Pingreq) AppendTo(dst []byte, version byte) ([]byte, error) {
	return append(dst, byte(PINGREQ)<<4, 0), nil
}

// AppendTo appends the two bytes of the packet.
func (*Pingresp) AppendTo(dst []byte, version byte) ([]byte, error) {
	return append(dst, byte(PINGRESP)<<4, 0), nil
}

// Disconnect is a DISCONNECT packet (§3.14). Before MQTT 5 it is empty and
// only a client sends it.
type Disconnect struct {
	ReasonCode ReasonCode // MQTT 5
	Properties Properties // MQTT 5
}

// Type returns DISCONNECT.
func (*Disconnect) Type() Type { return DISCONNECT }

func decodeDisconnect(r *rd, p *Disconnect, version byte) *Error {
	if version != Version5 {
		if r.left() != 0 {
			return malformed("%d bytes in a 3.1.1 DISCONNECT", r.left())
		}
		return nil
	}
	return decodeCodeAndProps(r, &p.ReasonCode, &p.Properties, &disconnectCodes, ctxDisconnect)
}

// decodeCodeAndProps reads the body of DISCONNECT and AUTH: empty means
// success, then a code, then optional properties.
func decodeCodeAndProps(r *rd, rc *ReasonCode, props *Properties, codes *codeSet, ctx propContext) *Error {
	if r.left() == 0 {
		return nil
	}
	c, _ := r.byte()
	*rc = ReasonCode(c)
	if !codes.has(*rc) {
		return malformed("reason code 0x%02x not allowed", c)
	}
	if r.left() > 0 {
		if err := decodeProperties(r, props, ctx); err != nil {
			return err
		}
	}
	if r.left() != 0 {
		return malformed("%d trailing bytes", r.left())
	}
	return nil
}

func codeAndPropsRemaining(rc ReasonCode, props *Properties) int {
	pl := props.propsLen()
	switch {
	case pl > 0:
		return 1 + varintLen(pl) + pl
	case rc != Success:
		return 1
	}
	return 0
}

// Size returns the encoded size for version.
func (p *Disconnect) Size(version byte) int {
	if version != Version5 {
		return 2
	}
	return packetSize(codeAndPropsRemaining(p.ReasonCode, &p.Properties))
}

// AppendTo appends the packet; before MQTT 5 it has no body.
func (p *Disconnect) AppendTo(dst []byte, version byte) ([]byte, error) {
	if !validVersion(version) {
		return dst, encodeErr(DISCONNECT, "protocol level %d", version)
	}
	if version != Version5 {
		return append(dst, byte(DISCONNECT)<<4, 0), nil
	}
	return appendCodeAndProps(dst, DISCONNECT, p.ReasonCode, &p.Properties, ctxDisconnect)
}

func appendCodeAndProps(dst []byte, t Type, rc ReasonCode, props *Properties, ctx propContext) ([]byte, error) {
	if err := props.check(t, ctx); err != nil {
		return dst, err
	}
	rl := codeAndPropsRemaining(rc, props)
	dst = appendHeader(dst, byte(t)<<4, rl)
	if rl > 0 {
		dst = append(dst, byte(rc))
	}
	if rl > 1 {
		dst = props.appendProps(dst)
	}
	return dst, nil
}

// Auth is an AUTH packet (§3.15), MQTT 5 only.
type Auth struct {
	ReasonCode ReasonCode
	Properties Properties
}

// Type returns AUTH.
func (*Auth) Type() Type { return AUTH }

// Size returns the encoded size.
func (p *Auth) Size(version byte) int {
	return packetSize(codeAndPropsRemaining(p.ReasonCode, &p.Properties))
}

// AppendTo appends the packet; it fails before MQTT 5.
func (p *Auth) AppendTo(dst []byte, version byte) ([]byte, error) {
	if version != Version5 {
		return dst, encodeErr(AUTH, "AUTH exists only in MQTT 5")
	}
	return appendCodeAndProps(dst, AUTH, p.ReasonCode, &p.Properties, ctxAuth)
}
