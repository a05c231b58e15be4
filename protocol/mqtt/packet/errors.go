package packet

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every decoding error is an [*Error] that matches one of
// them under errors.Is; encoding errors match [ErrEncode].
var (
	// ErrMalformed: the bytes do not parse (bad varint, truncation,
	// invalid UTF-8, reserved bits set, misplaced or unknown property,
	// trailing bytes). MQTT 5 reason code 0x81.
	ErrMalformed = errors.New("packet: malformed packet")
	// ErrProtocol: the packet parses but breaks a rule (duplicate
	// property, zero packet id, Receive Maximum 0, empty subscription
	// list, server-only packet from a client). Reason code 0x82.
	ErrProtocol = errors.New("packet: protocol error")
	// ErrTooLarge: the packet is larger than the limit given to the
	// reader. Reason code 0x95.
	ErrTooLarge = errors.New("packet: packet too large")
	// ErrUnsupportedVersion: a CONNECT with an unknown protocol name or
	// level. Reason code 0x84; a 3.1.1 server answers return code 1.
	ErrUnsupportedVersion = errors.New("packet: unsupported protocol version")
	// ErrTopicNameInvalid: a PUBLISH or will topic with a wildcard, or an
	// empty one where none is allowed. Reason code 0x90.
	ErrTopicNameInvalid = errors.New("packet: topic name invalid")
	// ErrTopicAliasInvalid: a Topic Alias property of 0. Reason code 0x94.
	ErrTopicAliasInvalid = errors.New("packet: topic alias invalid")
	// ErrEncode: a packet that cannot be written (field too long, packet
	// id 0, QoS 3, a property not allowed in the packet, a packet type the
	// version does not have).
	ErrEncode = errors.New("packet: cannot encode")
)

// Error is a decoding error carrying what a server must answer: the reason
// code of the CONNACK or DISCONNECT to send (MQTT 5) and the protocol
// level to answer in. It matches its Err sentinel under errors.Is.
type Error struct {
	// Err is the sentinel: ErrMalformed, ErrProtocol, ErrTooLarge,
	// ErrUnsupportedVersion, ErrTopicNameInvalid or ErrTopicAliasInvalid.
	Err error
	// Code is the MQTT 5 reason code for the failure.
	Code ReasonCode
	// Type is the type of the packet being decoded, 0 if the fixed header
	// itself was bad.
	Type Type
	// Version is the protocol level the packet was decoded for; for a
	// CONNECT the level it carries (0 if it was not reached). A server
	// answering a failed CONNECT uses it to choose the CONNACK layout.
	Version byte
	// Detail says what was wrong.
	Detail string
}

func (e *Error) Error() string {
	if e.Type != 0 {
		return e.Err.Error() + ": " + e.Type.String() + ": " + e.Detail
	}
	return e.Err.Error() + ": " + e.Detail
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

func malformed(format string, args ...any) *Error {
	return &Error{Err: ErrMalformed, Code: MalformedPacket, Detail: fmt.Sprintf(format, args...)}
}

func protocolErr(format string, args ...any) *Error {
	return &Error{Err: ErrProtocol, Code: ProtocolError, Detail: fmt.Sprintf(format, args...)}
}

func encodeErr(t Type, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrEncode, t, fmt.Sprintf(format, args...))
}

var errTruncated = &Error{Err: ErrMalformed, Code: MalformedPacket, Detail: "truncated"}

// withContext returns err (an *Error) stamped with the packet type and
// version; errors shared as package variables are copied first.
func withContext(err error, t Type, version byte) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	if c.Type == 0 {
		c.Type = t
	}
	if c.Version == 0 {
		c.Version = version
	}
	return &c
}
