package packet

import "strconv"

// ReasonCode is an MQTT 5 reason code (§2.4). The same byte carries the
// 3.1.1 CONNACK return code and SUBACK return codes; see the V3 constants
// and [V3ConnackCode].
type ReasonCode byte

// Reason codes of MQTT 5. Several names share a value; the packet type says
// which one is meant.
const (
	Success                             ReasonCode = 0x00
	NormalDisconnection                 ReasonCode = 0x00
	GrantedQoS0                         ReasonCode = 0x00
	GrantedQoS1                         ReasonCode = 0x01
	GrantedQoS2                         ReasonCode = 0x02
	DisconnectWithWillMessage           ReasonCode = 0x04
	NoMatchingSubscribers               ReasonCode = 0x10
	NoSubscriptionExisted               ReasonCode = 0x11
	ContinueAuthentication              ReasonCode = 0x18
	ReAuthenticate                      ReasonCode = 0x19
	UnspecifiedError                    ReasonCode = 0x80
	MalformedPacket                     ReasonCode = 0x81
	ProtocolError                       ReasonCode = 0x82
	ImplementationSpecificError         ReasonCode = 0x83
	UnsupportedProtocolVersion          ReasonCode = 0x84
	ClientIdentifierNotValid            ReasonCode = 0x85
	BadUserNameOrPassword               ReasonCode = 0x86
	NotAuthorized                       ReasonCode = 0x87
	ServerUnavailable                   ReasonCode = 0x88
	ServerBusy                          ReasonCode = 0x89
	Banned                              ReasonCode = 0x8A
	ServerShuttingDown                  ReasonCode = 0x8B
	BadAuthenticationMethod             ReasonCode = 0x8C
	KeepAliveTimeout                    ReasonCode = 0x8D
	SessionTakenOver                    ReasonCode = 0x8E
	TopicFilterInvalid                  ReasonCode = 0x8F
	TopicNameInvalid                    ReasonCode = 0x90
	PacketIdentifierInUse               ReasonCode = 0x91
	PacketIdentifierNotFound            ReasonCode = 0x92
	ReceiveMaximumExceeded              ReasonCode = 0x93
	TopicAliasInvalid                   ReasonCode = 0x94
	PacketTooLarge                      ReasonCode = 0x95
	MessageRateTooHigh                  ReasonCode = 0x96
	QuotaExceeded                       ReasonCode = 0x97
	AdministrativeAction                ReasonCode = 0x98
	PayloadFormatInvalid                ReasonCode = 0x99
	RetainNotSupported                  ReasonCode = 0x9A
	QoSNotSupported                     ReasonCode = 0x9B
	UseAnotherServer                    ReasonCode = 0x9C
	ServerMoved                         ReasonCode = 0x9D
	SharedSubscriptionsNotSupported     ReasonCode = 0x9E
	ConnectionRateExceeded              ReasonCode = 0x9F
	MaximumConnectTime                  ReasonCode = 0xA0
	SubscriptionIdentifiersNotSupported ReasonCode = 0xA1
	WildcardSubscriptionsNotSupported   ReasonCode = 0xA2
)

// MQTT 3.1.1 CONNACK return codes (§3.2.2.3) and the SUBACK failure code.
const (
	V3Accepted                    ReasonCode = 0x00
	V3RefusedProtocolVersion      ReasonCode = 0x01
	V3RefusedIdentifierRejected   ReasonCode = 0x02
	V3RefusedServerUnavailable    ReasonCode = 0x03
	V3RefusedBadUserNameOrPassord ReasonCode = 0x04
	V3RefusedNotAuthorized        ReasonCode = 0x05
	V3SubackFailure               ReasonCode = 0x80
)

var reasonNames = [256]string{
	0x00: "success",
	0x01: "granted QoS 1",
	0x02: "granted QoS 2",
	0x04: "disconnect with will message",
	0x10: "no matching subscribers",
	0x11: "no subscription existed",
	0x18: "continue authentication",
	0x19: "re-authenticate",
	0x80: "unspecified error",
	0x81: "malformed packet",
	0x82: "protocol error",
	0x83: "implementation specific error",
	0x84: "unsupported protocol version",
	0x85: "client identifier not valid",
	0x86: "bad user name or password",
	0x87: "not authorized",
	0x88: "server unavailable",
	0x89: "server busy",
	0x8A: "banned",
	0x8B: "server shutting down",
	0x8C: "bad authentication method",
	0x8D: "keep alive timeout",
	0x8E: "session taken over",
	0x8F: "topic filter invalid",
	0x90: "topic name invalid",
	0x91: "packet identifier in use",
	0x92: "packet identifier not found",
	0x93: "receive maximum exceeded",
	0x94: "topic alias invalid",
	0x95: "packet too large",
	0x96: "message rate too high",
	0x97: "quota exceeded",
	0x98: "administrative action",
	0x99: "payload format invalid",
	0x9A: "retain not supported",
	0x9B: "QoS not supported",
	0x9C: "use another server",
	0x9D: "server moved",
	0x9E: "shared subscriptions not supported",
	0x9F: "connection rate exceeded",
	0xA0: "maximum connect time",
	0xA1: "subscription identifiers not supported",
	0xA2: "wildcard subscriptions not supported",
}

// String returns the MQTT 5 name of the code in lower case ("success" for
// 0x00, whatever the packet), or "reason code 0xNN" for unassigned values.
func (c ReasonCode) String() string {
	if s := reasonNames[c]; s != "" {
		return s
	}
	return "reason code 0x" + strconv.FormatUint(uint64(c), 16)
}

// IsError reports whether the code is a failure (0x80 and above).
func (c ReasonCode) IsError() bool { return c >= 0x80 }

// V3ConnackCode maps an MQTT 5 CONNACK reason code onto the nearest 3.1.1
// return code: success stays 0, an unsupported version is 1, a refused
// client id 2, bad credentials 4, not authorized 5, anything else 3
// (server unavailable). Codes 1–5 are taken as 3.1.1 codes already.
func V3ConnackCode(c ReasonCode) ReasonCode {
	switch c {
	case Success, V3RefusedProtocolVersion, V3RefusedIdentifierRejected,
		V3RefusedServerUnavailable, V3RefusedBadUserNameOrPassord, V3RefusedNotAuthorized:
		return c
	case UnsupportedProtocolVersion:
		return V3RefusedProtocolVersion
	case ClientIdentifierNotValid:
		return V3RefusedIdentifierRejected
	case BadUserNameOrPassword:
		return V3RefusedBadUserNameOrPassord
	case NotAuthorized, Banned:
		return V3RefusedNotAuthorized
	default:
		return V3RefusedServerUnavailable
	}
}

// codeSet is a set of reason codes allowed in one packet type.
type codeSet [4]uint64

func (s *codeSet) has(c ReasonCode) bool { return s[c>>6]&(1<<(c&63)) != 0 }

func newCodeSet(codes ...ReasonCode) codeSet {
	var s codeSet
	for _, c := range codes {
		s[c>>6] |= 1 << (c & 63)
	}
	return s
}

var (
	connackCodes = newCodeSet(0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C,
		0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F)
	v3ConnackCodes  = newCodeSet(0, 1, 2, 3, 4, 5)
	pubackCodes     = newCodeSet(0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99)
	pubrelCodes     = newCodeSet(0x00, 0x92)
	subackCodes     = newCodeSet(0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2)
	v3SubackCodes   = newCodeSet(0x00, 0x01, 0x02, 0x80)
	unsubackCodes   = newCodeSet(0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91)
	disconnectCodes = newCodeSet(0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F,
		0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2)
	authCodes = newCodeSet(0x00, 0x18, 0x19)
)
