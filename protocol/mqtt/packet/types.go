package packet

import "strconv"

// Protocol levels.
const (
	Version31  byte = 3 // MQTT 3.1, protocol name "MQIsdp"
	Version311 byte = 4 // MQTT 3.1.1
	Version5   byte = 5 // MQTT 5.0
)

// MaxRemainingLength is the largest Remaining Length a fixed header can
// carry (four varint bytes).
const MaxRemainingLength = 268_435_455

// Type is a control packet type, the high nibble of the first byte.
type Type byte

// Packet types.
const (
	CONNECT     Type = 1
	CONNACK     Type = 2
	PUBLISH     Type = 3
	PUBACK      Type = 4
	PUBREC      Type = 5
	PUBREL      Type = 6
	PUBCOMP     Type = 7
	SUBSCRIBE   Type = 8
	SUBACK      Type = 9
	UNSUBSCRIBE Type = 10
	UNSUBACK    Type = 11
	PINGREQ     Type = 12
	PINGRESP    Type = 13
	DISCONNECT  Type = 14
	AUTH        Type = 15
)

var typeNames = [16]string{"RESERVED", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL",
	"PUBCOMP", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "AUTH"}

func (t Type) String() string {
	if t < 16 {
		return typeNames[t]
	}
	return "type " + strconv.Itoa(int(t))
}

// Packet is one decoded control packet: a pointer to one of the structs of
// this package (*Connect, *Publish, ...).
type Packet interface {
	// Type returns the packet type.
	Type() Type
	// Size returns the number of bytes AppendTo writes for version,
	// fixed header included (the MQTT 5 "packet size"). It does not check
	// that the packet can be encoded.
	Size(version byte) int
	// AppendTo appends the encoded packet to dst. It fails, matching
	// ErrEncode, when the packet cannot be represented in version.
	AppendTo(dst []byte, version byte) ([]byte, error)
}

func validVersion(v byte) bool { return v == Version31 || v == Version311 || v == Version5 }

// QoS levels.
const (
	QoS0 byte = 0
	QoS1 byte = 1
	QoS2 byte = 2
)
