package packet

import "math/bits"

// PropertyID identifies an MQTT 5 property (§2.2.2.2).
type PropertyID byte

// Property identifiers.
const (
	PropPayloadFormat          PropertyID = 0x01
	PropMessageExpiry          PropertyID = 0x02
	PropContentType            PropertyID = 0x03
	PropResponseTopic          PropertyID = 0x08
	PropCorrelationData        PropertyID = 0x09
	PropSubscriptionIdentifier PropertyID = 0x0B
	PropSessionExpiry          PropertyID = 0x11
	PropAssignedClientID       PropertyID = 0x12
	PropServerKeepAlive        PropertyID = 0x13
	PropAuthMethod             PropertyID = 0x15
	PropAuthData               PropertyID = 0x16
	PropRequestProblemInfo     PropertyID = 0x17
	PropWillDelay              PropertyID = 0x18
	PropRequestResponseInfo    PropertyID = 0x19
	PropResponseInfo           PropertyID = 0x1A
	PropServerReference        PropertyID = 0x1C
	PropReasonString           PropertyID = 0x1F
	PropReceiveMaximum         PropertyID = 0x21
	PropTopicAliasMaximum      PropertyID = 0x22
	PropTopicAlias             PropertyID = 0x23
	PropMaximumQoS             PropertyID = 0x24
	PropRetainAvailable        PropertyID = 0x25
	PropUserProperty           PropertyID = 0x26
	PropMaximumPacketSize      PropertyID = 0x27
	PropWildcardAvailable      PropertyID = 0x28
	PropSubIDAvailable         PropertyID = 0x29
	PropSharedAvailable        PropertyID = 0x2A
)

// UserProperty is one User Property: a name/value pair. Order and
// duplicates are significant, so properties are kept in a slice.
type UserProperty struct {
	Key, Value string
}

// MaxSubscriptionIdentifier is the largest Subscription Identifier.
const MaxSubscriptionIdentifier = MaxRemainingLength

// Properties holds the MQTT 5 properties of a packet or will. A property
// is written when it is marked present ([Properties.SetPresent]) or its
// value is not the zero value; decoding marks every property it reads, so
// a property sent with its zero value survives a decode/encode round trip.
// Fields not allowed in a packet type must stay zero and unmarked, or
// encoding fails. The []byte fields of a decoded packet alias the buffer
// it was decoded from.
type Properties struct {
	PayloadFormat           byte   // 0x01, 0 unspecified bytes, 1 UTF-8
	MessageExpiry           uint32 // 0x02, seconds
	ContentType             string // 0x03
	ResponseTopic           string // 0x08
	CorrelationData         []byte // 0x09
	SubscriptionIdentifiers []int  // 0x0B, once in SUBSCRIBE, repeatable in PUBLISH
	SessionExpiry           uint32 // 0x11, seconds, 0xFFFFFFFF never
	AssignedClientID        string // 0x12
	ServerKeepAlive         uint16 // 0x13
	AuthMethod              string // 0x15
	AuthData                []byte // 0x16
	RequestProblemInfo      byte   // 0x17, absent means 1
	WillDelay               uint32 // 0x18
	RequestResponseInfo     byte   // 0x19
	ResponseInfo            string // 0x1A
	ServerReference         string // 0x1C
	ReasonString            string // 0x1F
	ReceiveMaximum          uint16 // 0x21, absent means 65,535
	TopicAliasMaximum       uint16 // 0x22
	TopicAlias              uint16 // 0x23
	MaximumQoS              byte   // 0x24, absent means 2
	RetainAvailable         byte   // 0x25, absent means 1
	UserProperties          []UserProperty
	MaximumPacketSize       uint32 // 0x27, absent means no limit
	WildcardAvailable       byte   // 0x28, absent means 1
	SubIDAvailable          byte   // 0x29, absent means 1
	SharedAvailable         byte   // 0x2A, absent means 1

	present uint64 // bit id set when property id was read or marked
}

// Has reports whether the property was present in the decoded packet, was
// marked with SetPresent, or holds a non-zero value.
func (p *Properties) Has(id PropertyID) bool {
	return id < 64 && p.mask()&(1<<id) != 0
}

// SetPresent marks a property as present, so that it is written even with
// its zero value (a CONNACK's Maximum QoS 0, Session Expiry 0 overriding
// the client's).
func (p *Properties) SetPresent(id PropertyID) {
	if id < 64 {
		p.present |= 1 << id
	}
}

// ClearPresent removes the mark of SetPresent; a non-zero value is still
// written.
func (p *Properties) ClearPresent(id PropertyID) {
	if id < 64 {
		p.present &^= 1 << id
	}
}

// mask returns the set of properties to write: marked or non-zero.
func (p *Properties) mask() uint64 {
	m := p.present
	m |= bit(PropPayloadFormat, p.PayloadFormat != 0)
	m |= bit(PropMessageExpiry, p.MessageExpiry != 0)
	m |= bit(PropContentType, p.ContentType != "")
	m |= bit(PropResponseTopic, p.ResponseTopic != "")
	m |= bit(PropCorrelationData, len(p.CorrelationData) != 0)
	m |= bit(PropSubscriptionIdentifier, len(p.SubscriptionIdentifiers) != 0)
	m |= bit(PropSessionExpiry, p.SessionExpiry != 0)
	m |= bit(PropAssignedClientID, p.AssignedClientID != "")
	m |= bit(PropServerKeepAlive, p.ServerKeepAlive != 0)
	m |= bit(PropAuthMethod, p.AuthMethod != "")
	m |= bit(PropAuthData, len(p.AuthData) != 0)
	m |= bit(PropRequestProblemInfo, p.RequestProblemInfo != 0)
	m |= bit(PropWillDelay, p.WillDelay != 0)
	m |= bit(PropRequestResponseInfo, p.RequestResponseInfo != 0)
	m |= bit(PropResponseInfo, p.ResponseInfo != "")
	m |= bit(PropServerReference, p.ServerReference != "")
	m |= bit(PropReasonString, p.ReasonString != "")
	m |= bit(PropReceiveMaximum, p.ReceiveMaximum != 0)
	m |= bit(PropTopicAliasMaximum, p.TopicAliasMaximum != 0)
	m |= bit(PropTopicAlias, p.TopicAlias != 0)
	m |= bit(PropMaximumQoS, p.MaximumQoS != 0)
	m |= bit(PropRetainAvailable, p.RetainAvailable != 0)
	m |= bit(PropUserProperty, len(p.UserProperties) != 0)
	m |= bit(PropMaximumPacketSize, p.MaximumPacketSize != 0)
	m |= bit(PropWildcardAvailable, p.WildcardAvailable != 0)
	m |= bit(PropSubIDAvailable, p.SubIDAvailable != 0)
	m |= bit(PropSharedAvailable, p.SharedAvailable != 0)
	return m
}

func bit(id PropertyID, nonZero bool) uint64 {
	if nonZero {
		return 1 << id
	}
	return 0
}

// propKind is how a property's value is encoded.
type propKind byte

const (
	kByte propKind = iota + 1
	kU16
	kU32
	kVarint
	kString
	kBinary
	kPair
)

var propKinds = [64]propKind{
	0x01: kByte, 0x02: kU32, 0x03: kString, 0x08: kString, 0x09: kBinary, 0x0B: kVarint,
	0x11: kU32, 0x12: kString, 0x13: kU16, 0x15: kString, 0x16: kBinary, 0x17: kByte,
	0x18: kU32, 0x19: kByte, 0x1A: kString, 0x1C: kString, 0x1F: kString, 0x21: kU16,
	0x22: kU16, 0x23: kU16, 0x24: kByte, 0x25: kByte, 0x26: kPair, 0x27: kU32,
	0x28: kByte, 0x29: kByte, 0x2A: kByte,
}

// propContext is the set of properties allowed where properties appear.
type propContext uint64

func ctxOf(ids ...PropertyID) propContext {
	var c propContext
	for _, id := range ids {
		c |= 1 << id
	}
	return c
}

var (
	ctxConnect     = ctxOf(0x11, 0x15, 0x16, 0x17, 0x19, 0x21, 0x22, 0x26, 0x27)
	ctxWill        = ctxOf(0x01, 0x02, 0x03, 0x08, 0x09, 0x18, 0x26)
	ctxConnack     = ctxOf(0x11, 0x12, 0x13, 0x15, 0x16, 0x1A, 0x1C, 0x1F, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A)
	ctxPublish     = ctxOf(0x01, 0x02, 0x03, 0x08, 0x09, 0x0B, 0x23, 0x26)
	ctxAck         = ctxOf(0x1F, 0x26)
	ctxSubscribe   = ctxOf(0x0B, 0x26)
	ctxUnsubscribe = ctxOf(0x26)
	ctxDisconnect  = ctxOf(0x11, 0x1C, 0x1F, 0x26)
	ctxAuth        = ctxOf(0x15, 0x16, 0x1F, 0x26)
)

func (c propContext) allows(id PropertyID) bool { return id < 64 && c&(1<<id) != 0 }

// decodeProperties reads a property length and the properties after it
// from r into p, checking placement (ctx), duplicates and values.
func decodeProperties(r *rd, p *Properties, ctx propContext) *Error {
	n, err := r.varint()
	if err != nil {
		return err
	}
	if n > r.left() {
		return malformed("property length %d exceeds the packet", n)
	}
	end := r.i + n
	sub := rd{b: r.b[:end], i: r.i}
	for sub.i < end {
		idv, err := sub.varint()
		if err != nil {
			return err
		}
		if idv >= 64 || propKinds[idv] == 0 {
			return malformed("unknown property 0x%02x", idv)
		}
		id := PropertyID(idv)
		if !ctx.allows(id) {
			return malformed("property 0x%02x not allowed here", idv)
		}
		repeatable := id == PropUserProperty || (id == PropSubscriptionIdentifier && ctx == ctxPublish)
		if p.present&(1<<id) != 0 && !repeatable {
			return protocolErr("property 0x%02x given twice", idv)
		}
		p.present |= 1 << id
		if err := p.decodeOne(&sub, id); err != nil {
			return err
		}
	}
	r.i = end
	if p.Has(PropAuthData) && !p.Has(PropAuthMethod) {
		return protocolErr("authentication data without authentication method")
	}
	return nil
}

func byteFlag(r *rd, id PropertyID) (byte, *Error) {
	v, err := r.byte()
	if err != nil {
		return 0, err
	}
	if v > 1 {
		return 0, protocolErr("property 0x%02x must be 0 or 1, got %d", byte(id), v)
	}
	return v, nil
}

func (p *Properties) decodeOne(r *rd, id PropertyID) *Error {
	var err *Error
	switch id {
	case PropPayloadFormat:
		p.PayloadFormat, err = byteFlag(r, id)
	case PropMessageExpiry:
		p.MessageExpiry, err = r.u32()
	case PropContentType:
		p.ContentType, err = r.string()
	case PropResponseTopic:
		p.ResponseTopic, err = r.string()
		if err == nil && (p.ResponseTopic == "" || !validTopicName(p.ResponseTopic)) {
			err = protocolErr("response topic %q is not a valid topic name", p.ResponseTopic)
		}
	case PropCorrelationData:
		p.CorrelationData, err = r.binary()
	case PropSubscriptionIdentifier:
		var v int
		v, err = r.varint()
		if err == nil && v == 0 {
			err = protocolErr("subscription identifier 0")
		}
		p.SubscriptionIdentifiers = append(p.SubscriptionIdentifiers, v)
	case PropSessionExpiry:
		p.SessionExpiry, err = r.u32()
	case PropAssignedClientID:
		p.AssignedClientID, err = r.string()
	case PropServerKeepAlive:
		p.ServerKeepAlive, err = r.u16()
	case PropAuthMethod:
		p.AuthMethod, err = r.string()
	case PropAuthData:
		p.AuthData, err = r.binary()
	case PropRequestProblemInfo:
		p.RequestProblemInfo, err = byteFlag(r, id)
	case PropWillDelay:
		p.WillDelay, err = r.u32()
	case PropRequestResponseInfo:
		p.RequestResponseInfo, err = byteFlag(r, id)
	case PropResponseInfo:
		p.ResponseInfo, err = r.string()
	case PropServerReference:
		p.ServerReference, err = r.string()
	case PropReasonString:
		p.ReasonString, err = r.string()
	case PropReceiveMaximum:
		p.ReceiveMaximum, err = r.u16()
		if err == nil && p.ReceiveMaximum == 0 {
			err = protocolErr("receive maximum 0")
		}
	case PropTopicAliasMaximum:
		p.TopicAliasMaximum, err = r.u16()
	case PropTopicAlias:
		p.TopicAlias, err = r.u16()
		if err == nil && p.TopicAlias == 0 {
			err = &Error{Err: ErrTopicAliasInvalid, Code: TopicAliasInvalid, Detail: "topic alias 0"}
		}
	case PropMaximumQoS:
		p.MaximumQoS, err = byteFlag(r, id)
	case PropRetainAvailable:
		p.RetainAvailable, err = byteFlag(r, id)
	case PropUserProperty:
		var k, v string
		if k, err = r.string(); err == nil {
			v, err = r.string()
		}
		p.UserProperties = append(p.UserProperties, UserProperty{k, v})
	case PropMaximumPacketSize:
		p.MaximumPacketSize, err = r.u32()
		if err == nil && p.MaximumPacketSize == 0 {
			err = protocolErr("maximum packet size 0")
		}
	case PropWildcardAvailable:
		p.WildcardAvailable, err = byteFlag(r, id)
	case PropSubIDAvailable:
		p.SubIDAvailable, err = byteFlag(r, id)
	case PropSharedAvailable:
		p.SharedAvailable, err = byteFlag(r, id)
	}
	return err
}

// propsLen returns the length of the encoded properties, without the
// property length varint.
func (p *Properties) propsLen() int { return p.lenOf(p.mask()) }

// lenOf is propsLen for the properties in m. Properties are written in
// ascending id order.
func (p *Properties) lenOf(m uint64) int {
	if m == 0 {
		return 0
	}
	n := 0
	for b := m; b != 0; b &= b - 1 {
		id := PropertyID(bits.TrailingZeros64(b))
		switch propKinds[id] {
		case kByte:
			n += 2
		case kU16:
			n += 3
		case kU32:
			n += 5
		case kString:
			n += 3 + len(p.stringOf(id))
		case kBinary:
			n += 3 + len(p.binaryOf(id))
		case kVarint:
			for _, v := range p.SubscriptionIdentifiers {
				n += 1 + varintLen(v)
			}
		case kPair:
			for _, u := range p.UserProperties {
				n += 5 + len(u.Key) + len(u.Value)
			}
		}
	}
	return n
}

// encodedLen is the size of the properties with their length varint.
func (p *Properties) encodedLen() int {
	n := p.propsLen()
	return varintLen(n) + n
}

func (p *Properties) stringOf(id PropertyID) string {
	switch id {
	case PropContentType:
		return p.ContentType
	case PropResponseTopic:
		return p.ResponseTopic
	case PropAssignedClientID:
		return p.AssignedClientID
	case PropAuthMethod:
		return p.AuthMethod
	case PropResponseInfo:
		return p.ResponseInfo
	case PropServerReference:
		return p.ServerReference
	case PropReasonString:
		return p.ReasonString
	}
	return ""
}

func (p *Properties) binaryOf(id PropertyID) []byte {
	if id == PropCorrelationData {
		return p.CorrelationData
	}
	return p.AuthData
}

func (p *Properties) scalarOf(id PropertyID) uint32 {
	switch id {
	case PropPayloadFormat:
		return uint32(p.PayloadFormat)
	case PropMessageExpiry:
		return p.MessageExpiry
	case PropSessionExpiry:
		return p.SessionExpiry
	case PropServerKeepAlive:
		return uint32(p.ServerKeepAlive)
	case PropRequestProblemInfo:
		return uint32(p.RequestProblemInfo)
	case PropWillDelay:
		return p.WillDelay
	case PropRequestResponseInfo:
		return uint32(p.RequestResponseInfo)
	case PropReceiveMaximum:
		return uint32(p.ReceiveMaximum)
	case PropTopicAliasMaximum:
		return uint32(p.TopicAliasMaximum)
	case PropTopicAlias:
		return uint32(p.TopicAlias)
	case PropMaximumQoS:
		return uint32(p.MaximumQoS)
	case PropRetainAvailable:
		return uint32(p.RetainAvailable)
	case PropMaximumPacketSize:
		return p.MaximumPacketSize
	case PropWildcardAvailable:
		return uint32(p.WildcardAvailable)
	case PropSubIDAvailable:
		return uint32(p.SubIDAvailable)
	case PropSharedAvailable:
		return uint32(p.SharedAvailable)
	}
	return 0
}

// check verifies that the properties can be written in ctx.
func (p *Properties) check(t Type, ctx propContext) error {
	m := p.mask()
	if m&^uint64(ctx) != 0 {
		for b := m; b != 0; b &= b - 1 {
			if id := PropertyID(bits.TrailingZeros64(b)); !ctx.allows(id) {
				return encodeErr(t, "property 0x%02x not allowed", byte(id))
			}
		}
	}
	if m&(1<<PropCorrelationData|1<<PropAuthData|1<<PropSubscriptionIdentifier|1<<PropUserProperty|
		1<<PropContentType|1<<PropResponseTopic|1<<PropAssignedClientID|1<<PropAuthMethod|
		1<<PropResponseInfo|1<<PropServerReference|1<<PropReasonString) == 0 {
		return nil
	}
	for b := m; b != 0; b &= b - 1 {
		id := PropertyID(bits.TrailingZeros64(b))
		switch propKinds[id] {
		case kString:
			if len(p.stringOf(id)) > 65535 {
				return encodeErr(t, "property 0x%02x longer than 65,535 bytes", byte(id))
			}
		case kBinary:
			if len(p.binaryOf(id)) > 65535 {
				return encodeErr(t, "property 0x%02x longer than 65,535 bytes", byte(id))
			}
		case kVarint:
			if ctx != ctxPublish && len(p.SubscriptionIdentifiers) > 1 {
				return encodeErr(t, "more than one subscription identifier")
			}
			for _, v := range p.SubscriptionIdentifiers {
				if v < 1 || v > MaxSubscriptionIdentifier {
					return encodeErr(t, "subscription identifier %d out of range", v)
				}
			}
		case kPair:
			for _, u := range p.UserProperties {
				if len(u.Key) > 65535 || len(u.Value) > 65535 {
					return encodeErr(t, "user property longer than 65,535 bytes")
				}
			}
		}
	}
	return nil
}

// appendProps appends the property length and the properties.
func (p *Properties) appendProps(dst []byte) []byte {
	m := p.mask()
	dst = appendVarint(dst, p.lenOf(m))
	if m == 0 {
		return dst
	}
	for b := m; b != 0; b &= b - 1 {
		id := PropertyID(bits.TrailingZeros64(b))
		switch propKinds[id] {
		case kByte:
			dst = append(dst, byte(id), byte(p.scalarOf(id)))
		case kU16:
			dst = appendU16(append(dst, byte(id)), uint16(p.scalarOf(id)))
		case kU32:
			dst = appendU32(append(dst, byte(id)), p.scalarOf(id))
		case kString:
			dst = appendString(append(dst, byte(id)), p.stringOf(id))
		case kBinary:
			dst = appendBinary(append(dst, byte(id)), p.binaryOf(id))
		case kVarint:
			for _, v := range p.SubscriptionIdentifiers {
				dst = appendVarint(append(dst, byte(id)), v)
			}
		case kPair:
			for _, u := range p.UserProperties {
				dst = appendString(append(dst, byte(id)), u.Key)
				dst = appendString(dst, u.Value)
			}
		}
	}
	return dst
}

// validTopicName is the codec's check of a topic name: no wildcards.
// Emptiness is checked by the caller, which knows about topic aliases.
func validTopicName(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '+' || s[i] == '#' {
			return false
		}
	}
	return true
}
