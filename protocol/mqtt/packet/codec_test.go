package packet

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func fullProps() Properties {
	return Properties{
		PayloadFormat: 1, MessageExpiry: 60, ContentType: "text/plain", ResponseTopic: "reply/to",
		CorrelationData: []byte{1, 2, 3}, UserProperties: []UserProperty{{"a", "1"}, {"a", "1"}, {"b", ""}},
	}
}

func roundTripCases() []struct {
	name     string
	p        Packet
	versions []byte
} {
	v35 := []byte{Version311, Version5}
	v5 := []byte{Version5}
	all := []byte{Version31, Version311, Version5}
	pub := fullProps()
	pub.TopicAlias = 3
	pubS2C := fullProps()
	pubS2C.SubscriptionIdentifiers = []int{1, 268435455, 7}
	connack := Properties{SessionExpiry: 0xFFFFFFFF, AssignedClientID: "auto-1", ServerKeepAlive: 30,
		ReceiveMaximum: 10, TopicAliasMaximum: 5, MaximumPacketSize: 1 << 20, ReasonString: "ok",
		ServerReference: "other:1883", ResponseInfo: "r/"}
	connack.SetPresent(PropMaximumQoS)
	connack.SetPresent(PropRetainAvailable)
	connack.SetPresent(PropSharedAvailable)
	return []struct {
		name     string
		p        Packet
		versions []byte
	}{
		{"connect v3 minimal", &Connect{Version: Version311, CleanStart: true}, nil},
		{"connect 3.1", &Connect{Version: Version31, ClientID: "c", UsernameFlag: true, Username: "u", PasswordFlag: true, Password: []byte("p")}, nil},
		{"connect v5 full", &Connect{Version: Version5, KeepAlive: 60, ClientID: "client-ü",
			Properties: Properties{SessionExpiry: 3600, ReceiveMaximum: 100, MaximumPacketSize: 4096, TopicAliasMaximum: 10,
				RequestResponseInfo: 1, AuthMethod: "SCRAM", AuthData: []byte{9}, UserProperties: []UserProperty{{"k", "v"}}},
			Will: &Will{QoS: 2, Retain: true, Topic: "will/t", Payload: []byte("bye"),
				Properties: Properties{WillDelay: 5, PayloadFormat: 1, ContentType: "c", UserProperties: []UserProperty{{"x", "y"}}}},
			PasswordFlag: true, Password: []byte{0, 1}}, nil},
		{"connack", &Connack{SessionPresent: true}, all},
		{"connack refused", &Connack{ReasonCode: NotAuthorized, Properties: Properties{ReasonString: "no"}}, all},
		{"connack v5 props", &Connack{Properties: connack}, v5},
		{"publish qos0", &Publish{Topic: "a/b", Payload: []byte("hello")}, all},
		{"publish empty payload retain", &Publish{Topic: "a", Retain: true}, all},
		{"publish qos1 dup", &Publish{Topic: "a/b", QoS: 1, Dup: true, PacketID: 7, Payload: bytes.Repeat([]byte{'x'}, 300)}, all},
		{"publish qos2 props", &Publish{Topic: "t", QoS: 2, PacketID: 65535, Properties: pub, Payload: []byte{0}}, v5},
		{"publish alias only", &Publish{QoS: 1, PacketID: 1, Properties: Properties{TopicAlias: 2}}, v5},
		{"publish sub ids", &Publish{Topic: "t", Properties: pubS2C}, v5},
		{"publish 200k", &Publish{Topic: "big", Payload: bytes.Repeat([]byte{7}, 200_000)}, v35},
		{"puback", &Puback{PacketID: 1}, all},
		{"puback code", &Puback{PacketID: 2, ReasonCode: NoMatchingSubscribers}, all},
		{"pubrec props", &Pubrec{PacketID: 3, ReasonCode: QuotaExceeded, Properties: Properties{ReasonString: "full"}}, all},
		{"pubrec success props", &Pubrec{PacketID: 3, Properties: Properties{UserProperties: []UserProperty{{"k", "v"}}}}, all},
		{"pubrel", &Pubrel{PacketID: 4}, all},
		{"pubrel not found", &Pubrel{PacketID: 4, ReasonCode: PacketIdentifierNotFound}, all},
		{"pubcomp", &Pubcomp{PacketID: 5}, all},
		{"subscribe", &Subscribe{PacketID: 9, Subscriptions: []Subscription{{Filter: "a/+", QoS: 1}, {Filter: "#", QoS: 2}}}, all},
		{"subscribe v5 options", &Subscribe{PacketID: 9, Properties: Properties{SubscriptionIdentifiers: []int{42}},
			Subscriptions: []Subscription{{Filter: "a/#", QoS: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2},
				{Filter: "$share/g/x", QoS: 0, RetainHandling: 1}}}, v5},
		{"suback", &Suback{PacketID: 9, ReasonCodes: []ReasonCode{GrantedQoS1, GrantedQoS2, GrantedQoS0, V3SubackFailure}}, all},
		{"suback v5", &Suback{PacketID: 9, ReasonCodes: []ReasonCode{TopicFilterInvalid, SharedSubscriptionsNotSupported},
			Properties: Properties{ReasonString: "why"}}, v5},
		{"unsubscribe", &Unsubscribe{PacketID: 10, Filters: []string{"a/b", "", "c/#"}}, all},
		{"unsuback v3", &Unsuback{PacketID: 10}, []byte{Version31, Version311}},
		{"unsuback v5", &Unsuback{PacketID: 10, ReasonCodes: []ReasonCode{Success, NoSubscriptionExisted}}, v5},
		{"pingreq", &Pingreq{}, all},
		{"pingresp", &Pingresp{}, all},
		{"disconnect", &Disconnect{}, all},
		{"disconnect will", &Disconnect{ReasonCode: DisconnectWithWillMessage}, v5},
		{"disconnect props", &Disconnect{ReasonCode: ServerMoved, Properties: Properties{ServerReference: "x:1", ReasonString: "bye"}}, v5},
		{"auth", &Auth{}, v5},
		{"auth continue", &Auth{ReasonCode: ContinueAuthentication, Properties: Properties{AuthMethod: "m", AuthData: []byte("d")}}, v5},
	}
}

// TestRoundTrip encodes every packet, checks Size against the bytes,
// reads it back with ReadPacket and a Decoder, and checks that a second
// encoding gives the same bytes.
func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases() {
		versions := tc.versions
		if tc.p.Type() == CONNECT {
			versions = []byte{tc.p.(*Connect).Version}
		}
		for _, v := range versions {
			b, err := tc.p.AppendTo(nil, v)
			if err != nil {
				t.Fatalf("%s v%d: encode: %v", tc.name, v, err)
			}
			if got := tc.p.Size(v); got != len(b) {
				t.Errorf("%s v%d: Size %d, encoded %d bytes", tc.name, v, got, len(b))
			}
			readV := v
			if tc.p.Type() == CONNECT {
				readV = 0
			}
			got, err := ReadPacket(bufio.NewReader(bytes.NewReader(b)), readV, 0)
			if err != nil {
				t.Fatalf("%s v%d: decode %x: %v", tc.name, v, b, err)
			}
			if got.Type() != tc.p.Type() {
				t.Fatalf("%s v%d: type %s", tc.name, v, got.Type())
			}
			b2, err := got.AppendTo(nil, v)
			if err != nil {
				t.Fatalf("%s v%d: re-encode: %v", tc.name, v, err)
			}
			if !bytes.Equal(b, b2) {
				t.Errorf("%s v%d: re-encoded\n%x\nwant\n%x", tc.name, v, b2, b)
			}
			if v == Version5 || tc.p.Type() == PUBLISH || tc.p.Type() == SUBSCRIBE {
				want := reflect.ValueOf(tc.p).Elem().Interface()
				have := reflect.ValueOf(got).Elem().Interface()
				if !equalIgnoringPresence(want, have, v) {
					t.Errorf("%s v%d: decoded\n%+v\nwant\n%+v", tc.name, v, have, want)
				}
			}
		}
	}
}

// equalIgnoringPresence compares packets with the presence marks cleared.
func equalIgnoringPresence(a, b any, v byte) bool {
	clear := func(x any) any {
		switch p := x.(type) {
		case Connect:
			p.Properties.present = 0
			if p.Will != nil {
				w := *p.Will
				w.Properties.present = 0
				p.Will = &w
			}
			return p
		case Connack:
			p.Properties.present = 0
			return p
		case Publish:
			p.Properties.present = 0
			if len(p.Payload) == 0 {
				p.Payload = nil
			}
			if v != Version5 {
				p.Properties = Properties{}
			}
			return p
		case Subscribe:
			p.Properties.present = 0
			if v != Version5 {
				p.Properties = Properties{}
				for i := range p.Subscriptions {
					s := &p.Subscriptions[i]
					s.NoLocal, s.RetainAsPublished, s.RetainHandling = false, false, 0
				}
			}
			return p
		case Suback:
			p.Properties.present = 0
			return p
		case Unsuback:
			p.Properties.present = 0
			return p
		case Puback:
			p.Properties.present = 0
			return p
		case Pubrec:
			p.Properties.present = 0
			return p
		case Pubrel:
			p.Properties.present = 0
			return p
		case Pubcomp:
			p.Properties.present = 0
			return p
		case Disconnect:
			p.Properties.present = 0
			return p
		case Auth:
			p.Properties.present = 0
			return p
		}
		return x
	}
	return reflect.DeepEqual(clear(a), clear(b))
}

func TestPresentZeroProperty(t *testing.T) {
	var ca Connack
	b, _ := ca.AppendTo(nil, Version5)
	if len(b) != 5 { // 20 03 00 00 00
		t.Fatalf("empty CONNACK %x", b)
	}
	ca.Properties.SetPresent(PropMaximumQoS)
	ca.Properties.SetPresent(PropSessionExpiry)
	b, _ = ca.AppendTo(nil, Version5)
	want := []byte{0x20, 0x0A, 0, 0, 7, 0x11, 0, 0, 0, 0, 0x24, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("got %x want %x", b, want)
	}
	p, err := Decode(b[0], b[2:], Version5)
	if err != nil {
		t.Fatal(err)
	}
	props := &p.(*Connack).Properties
	if !props.Has(PropMaximumQoS) || !props.Has(PropSessionExpiry) || props.Has(PropRetainAvailable) {
		t.Fatalf("presence lost: %+v", props)
	}
}

// TestKnownBytes checks encodings against bytes written out by hand from
// the specification.
func TestKnownBytes(t *testing.T) {
	cases := []struct {
		name string
		p    Packet
		v    byte
		want []byte
	}{
		{"pingreq", &Pingreq{}, Version311, []byte{0xC0, 0}},
		{"v3 connack", &Connack{ReasonCode: V3RefusedProtocolVersion}, Version311, []byte{0x20, 2, 0, 1}},
		{"v3 connack mapped", &Connack{ReasonCode: BadUserNameOrPassword}, Version311, []byte{0x20, 2, 0, 4}},
		{"v5 connack", &Connack{ReasonCode: UnsupportedProtocolVersion}, Version5, []byte{0x20, 3, 0, 0x84, 0}},
		{"v3 puback", &Puback{PacketID: 0x1234, ReasonCode: QuotaExceeded}, Version311, []byte{0x40, 2, 0x12, 0x34}},
		{"v5 puback short", &Puback{PacketID: 1}, Version5, []byte{0x40, 2, 0, 1}},
		{"v5 puback code", &Puback{PacketID: 1, ReasonCode: 0x10}, Version5, []byte{0x40, 3, 0, 1, 0x10}},
		{"pubrel flags", &Pubrel{PacketID: 1}, Version311, []byte{0x62, 2, 0, 1}},
		{"v3 suback failure", &Suback{PacketID: 1, ReasonCodes: []ReasonCode{NotAuthorized}}, Version311, []byte{0x90, 3, 0, 1, 0x80}},
		{"v3 unsuback", &Unsuback{PacketID: 1, ReasonCodes: []ReasonCode{Success}}, Version311, []byte{0xB0, 2, 0, 1}},
		{"v5 disconnect", &Disconnect{}, Version5, []byte{0xE0, 0}},
		{"v5 disconnect code", &Disconnect{ReasonCode: SessionTakenOver}, Version5, []byte{0xE0, 1, 0x8E}},
		{"publish", &Publish{Topic: "a/b", QoS: 1, PacketID: 10, Payload: []byte{1}}, Version311,
			[]byte{0x32, 8, 0, 3, 'a', '/', 'b', 0, 10, 1}},
		{"v5 publish", &Publish{Topic: "a", Retain: true}, Version5, []byte{0x31, 4, 0, 1, 'a', 0}},
		{"v3 connect", &Connect{Version: Version311, CleanStart: true, KeepAlive: 60, ClientID: "c"}, 0,
			[]byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60, 0, 1, 'c'}},
	}
	for _, tc := range cases {
		got, err := tc.p.AppendTo(nil, tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: got %x want %x", tc.name, got, tc.want)
		}
	}
}

func TestRemainingLength(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 2097151, 2097152, MaxRemainingLength} {
		b := appendVarint(nil, n)
		if len(b) != varintLen(n) {
			t.Errorf("%d: %d bytes, varintLen %d", n, len(b), varintLen(n))
		}
		got, size, err := decodeVarint(b, true)
		if err != nil || got != n || size != len(b) {
			t.Errorf("%d: decoded %d (%d bytes, %v)", n, got, size, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	v3, v5 := Version311, Version5
	cases := []struct {
		name string
		v    byte
		in   []byte
		want error
		code ReasonCode
	}{
		{"type 0", v3, []byte{0x00, 0}, ErrMalformed, MalformedPacket},
		{"5-byte remaining length", v3, []byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrMalformed, MalformedPacket},
		{"v5 long form remaining length", v5, []byte{0xC0, 0x80, 0x00}, ErrMalformed, MalformedPacket},
		{"pingreq with body", v3, []byte{0xC0, 1, 0}, ErrMalformed, MalformedPacket},
		{"pingreq flags", v3, []byte{0xC1, 0}, ErrMalformed, MalformedPacket},
		{"pubrel flags 0", v3, []byte{0x60, 2, 0, 1}, ErrMalformed, MalformedPacket},
		{"subscribe flags 0", v3, []byte{0x80, 6, 0, 1, 0, 1, 'a', 0}, ErrMalformed, MalformedPacket},
		{"publish qos 3", v3, []byte{0x36, 5, 0, 1, 'a', 0, 1}, ErrMalformed, MalformedPacket},
		{"publish dup qos 0", v3, []byte{0x38, 3, 0, 1, 'a'}, ErrMalformed, MalformedPacket},
		{"publish id 0", v3, []byte{0x32, 5, 0, 1, 'a', 0, 0}, ErrProtocol, ProtocolError},
		{"publish wildcard", v3, []byte{0x30, 3, 0, 1, '+'}, ErrTopicNameInvalid, TopicNameInvalid},
		{"publish hash", v5, []byte{0x30, 6, 0, 3, 'a', '/', '#', 0}, ErrTopicNameInvalid, TopicNameInvalid},
		{"publish empty topic v3", v3, []byte{0x30, 2, 0, 0}, ErrTopicNameInvalid, TopicNameInvalid},
		{"publish empty topic v5", v5, []byte{0x30, 3, 0, 0, 0}, ErrProtocol, ProtocolError},
		{"publish NUL", v3, []byte{0x30, 3, 0, 1, 0}, ErrMalformed, MalformedPacket},
		{"publish surrogate", v3, []byte{0x30, 5, 0, 3, 0xED, 0xA0, 0x80}, ErrMalformed, MalformedPacket},
		{"publish bad utf8", v3, []byte{0x30, 3, 0, 1, 0xff}, ErrMalformed, MalformedPacket},
		{"publish truncated topic", v3, []byte{0x30, 3, 0, 5, 'a'}, ErrMalformed, MalformedPacket},
		{"publish alias 0", v5, []byte{0x30, 7, 0, 1, 'a', 3, 0x23, 0, 0}, ErrTopicAliasInvalid, TopicAliasInvalid},
		{"publish unknown property", v5, []byte{0x30, 6, 0, 1, 'a', 2, 0x7f, 0}, ErrMalformed, MalformedPacket},
		{"publish misplaced property", v5, []byte{0x30, 9, 0, 1, 'a', 5, 0x11, 0, 0, 0, 1}, ErrMalformed, MalformedPacket},
		{"publish duplicate property", v5, []byte{0x30, 8, 0, 1, 'a', 4, 0x01, 0, 0x01, 0}, ErrProtocol, ProtocolError},
		{"publish payload format 2", v5, []byte{0x30, 6, 0, 1, 'a', 2, 0x01, 2}, ErrProtocol, ProtocolError},
		{"publish property length too long", v5, []byte{0x30, 5, 0, 1, 'a', 9, 0}, ErrMalformed, MalformedPacket},
		{"publish sub id 0", v5, []byte{0x30, 6, 0, 1, 'a', 2, 0x0B, 0}, ErrProtocol, ProtocolError},
		{"puback id 0", v3, []byte{0x40, 2, 0, 0}, ErrProtocol, ProtocolError},
		{"puback v3 trailing", v3, []byte{0x40, 3, 0, 1, 0}, ErrMalformed, MalformedPacket},
		{"puback v5 bad code", v5, []byte{0x40, 3, 0, 1, 0x92}, ErrMalformed, MalformedPacket},
		{"puback v5 truncated", v5, []byte{0x40, 1, 0}, ErrMalformed, MalformedPacket},
		{"subscribe empty", v3, []byte{0x82, 2, 0, 1}, ErrProtocol, ProtocolError},
		{"subscribe v3 options", v3, []byte{0x82, 6, 0, 1, 0, 1, 'a', 4}, ErrMalformed, MalformedPacket},
		{"subscribe v3 qos 3", v3, []byte{0x82, 6, 0, 1, 0, 1, 'a', 3}, ErrMalformed, MalformedPacket},
		{"subscribe v5 reserved", v5, []byte{0x82, 7, 0, 1, 0, 0, 1, 'a', 0x40}, ErrMalformed, MalformedPacket},
		{"subscribe v5 qos 3", v5, []byte{0x82, 7, 0, 1, 0, 0, 1, 'a', 3}, ErrProtocol, ProtocolError},
		{"subscribe v5 retain handling 3", v5, []byte{0x82, 7, 0, 1, 0, 0, 1, 'a', 0x30}, ErrProtocol, ProtocolError},
		{"subscribe v5 shared no local", v5, append([]byte{0x82, 17, 0, 1, 0, 0, 11}, append([]byte("$share/g/ab"), 4)...), ErrProtocol, ProtocolError},
		{"subscribe v5 two sub ids", v5, []byte{0x82, 11, 0, 1, 4, 0x0B, 1, 0x0B, 2, 0, 1, 'a', 0}, ErrProtocol, ProtocolError},
		{"subscribe missing options", v3, []byte{0x82, 5, 0, 1, 0, 1, 'a'}, ErrMalformed, MalformedPacket},
		{"unsubscribe empty", v3, []byte{0xA2, 2, 0, 1}, ErrProtocol, ProtocolError},
		{"suback no codes", v3, []byte{0x90, 2, 0, 1}, ErrProtocol, ProtocolError},
		{"suback v3 code", v3, []byte{0x90, 3, 0, 1, 0x87}, ErrMalformed, MalformedPacket},
		{"unsuback v3 trailing", v3, []byte{0xB0, 3, 0, 1, 0}, ErrMalformed, MalformedPacket},
		{"disconnect v3 body", v3, []byte{0xE0, 1, 0}, ErrMalformed, MalformedPacket},
		{"disconnect v5 bad code", v5, []byte{0xE0, 1, 0x01}, ErrMalformed, MalformedPacket},
		{"auth v3", v3, []byte{0xF0, 0}, ErrMalformed, MalformedPacket},
		{"auth data without method", v5, []byte{0xF0, 6, 0x18, 4, 0x16, 0, 1, 'x'}, ErrProtocol, ProtocolError},
		{"connack reserved", v3, []byte{0x20, 2, 2, 0}, ErrMalformed, MalformedPacket},
		{"connack v3 code", v3, []byte{0x20, 2, 0, 6}, ErrMalformed, MalformedPacket},
		{"connack receive maximum 0", v5, []byte{0x20, 6, 0, 0, 3, 0x21, 0, 0}, ErrProtocol, ProtocolError},
		{"connack max packet 0", v5, []byte{0x20, 8, 0, 0, 5, 0x27, 0, 0, 0, 0}, ErrProtocol, ProtocolError},
		{"non-connect first", 0, []byte{0xC0, 0}, ErrProtocol, ProtocolError},
		{"connect bad name", 0, []byte{0x10, 10, 0, 4, 'M', 'Q', 'T', 'X', 4, 2, 0, 0, 0, 0}, ErrUnsupportedVersion, UnsupportedProtocolVersion},
		{"connect level 6", 0, []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 6, 2, 0, 0, 0, 0}, ErrUnsupportedVersion, UnsupportedProtocolVersion},
		{"connect MQIsdp level 4", 0, []byte{0x10, 14, 0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 4, 2, 0, 0, 0, 0}, ErrUnsupportedVersion, UnsupportedProtocolVersion},
		{"connect reserved flag", 0, []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 3, 0, 0, 0, 0}, ErrMalformed, MalformedPacket},
		{"connect will qos without will", 0, []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x0A, 0, 0, 0, 0}, ErrMalformed, MalformedPacket},
		{"connect will retain without will", 0, []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x22, 0, 0, 0, 0}, ErrMalformed, MalformedPacket},
		{"connect will qos 3", 0, []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x1E, 0, 0, 0, 0}, ErrMalformed, MalformedPacket},
		{"connect v3 password only", 0, []byte{0x10, 14, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x42, 0, 0, 0, 0, 0, 0}, ErrProtocol, ProtocolError},
		{"connect trailing", 0, []byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 0, 9}, ErrMalformed, MalformedPacket},
		{"connect client id NUL", 0, []byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 1, 0}, ErrMalformed, MalformedPacket},
		{"connect will topic wildcard", 0, []byte{0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x06, 0, 0, 0, 0, 0, 1, '#', 0, 0}, ErrTopicNameInvalid, TopicNameInvalid},
		{"connect v5 receive maximum 0", 0, []byte{0x10, 16, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 0, 3, 0x21, 0, 0, 0, 0}, ErrProtocol, ProtocolError},
		{"connect v5 will property in connect", 0, []byte{0x10, 18, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 0, 5, 0x18, 0, 0, 0, 1, 0, 0}, ErrMalformed, MalformedPacket},
		{"connect v5 truncated properties", 0, []byte{0x10, 11, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 0, 5}, ErrMalformed, MalformedPacket},
	}
	for _, tc := range cases {
		_, err := ReadPacket(bufio.NewReader(bytes.NewReader(tc.in)), tc.v, 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%s: error %v has code %v, want %v", tc.name, err, e.Code, tc.code)
		}
	}
}

func TestConnectErrorVersion(t *testing.T) {
	// A v5 CONNECT that fails after the level tells the server to answer
	// with a v5 CONNACK; an unknown level is reported as sent.
	in := []byte{0x10, 16, 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 0, 3, 0x21, 0, 0, 0, 0}
	_, err := ReadPacket(bufio.NewReader(bytes.NewReader(in)), 0, 0)
	var e *Error
	if !errors.As(err, &e) || e.Version != Version5 || e.Type != CONNECT {
		t.Fatalf("got %#v", err)
	}
	in = []byte{0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 9, 2, 0, 0, 0, 0}
	_, err = ReadPacket(bufio.NewReader(bytes.NewReader(in)), 0, 0)
	if !errors.As(err, &e) || e.Version != 9 || !strings.Contains(e.Error(), "protocol level 9") {
		t.Fatalf("got %v", err)
	}
}

func TestMaxSize(t *testing.T) {
	p := &Publish{Topic: "t", Payload: make([]byte, 100)}
	b, _ := p.AppendTo(nil, Version5)
	if _, err := ReadPacket(bufio.NewReader(bytes.NewReader(b)), Version5, len(b)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := ReadPacket(bufio.NewReader(bytes.NewReader(b)), Version5, len(b)-1)
	var e *Error
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &e) || e.Code != PacketTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestTruncatedStream(t *testing.T) {
	p := &Publish{Topic: "t", QoS: 1, PacketID: 1, Payload: make([]byte, 100)}
	b, _ := p.AppendTo(nil, Version311)
	if _, err := ReadPacket(bufio.NewReader(bytes.NewReader(nil)), Version311, 0); err != io.EOF {
		t.Fatalf("empty stream: %v", err)
	}
	for _, n := range []int{1, 2, 50, len(b) - 1} {
		_, err := ReadPacket(bufio.NewReader(bytes.NewReader(b[:n])), Version311, 0)
		if err != io.ErrUnexpectedEOF {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
	// A length of 256 MiB with a few bytes behind it fails without
	// allocating the announced size.
	huge := []byte{0x30, 0xff, 0xff, 0xff, 0x7f, 0, 1, 'a'}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadPacket(bufio.NewReader(bytes.NewReader(huge)), Version311, 0)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("huge: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("a lying length made the reader allocate %d bytes", n)
	}
}

func TestDecoder(t *testing.T) {
	var stream []byte
	pkts := []Packet{
		&Connect{Version: Version5, ClientID: "c", CleanStart: true},
		&Publish{Topic: "a", QoS: 1, PacketID: 1, Payload: []byte("one")},
		&Publish{Topic: "b", Payload: bytes.Repeat([]byte("z"), 10000)},
		&Pingreq{},
		&Disconnect{ReasonCode: DisconnectWithWillMessage},
	}
	for i, p := range pkts {
		v := Version5
		var err error
		if stream, err = p.AppendTo(stream, v); err != nil {
			t.Fatalf("%d: %v", i, err)
		}
	}
	d := NewDecoder(bytes.NewReader(stream))
	d.FromClient = true
	for i, want := range pkts {
		got, err := d.Read()
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if got.Type() != want.Type() {
			t.Fatalf("%d: %s, want %s", i, got.Type(), want.Type())
		}
		if pub, ok := want.(*Publish); ok && !bytes.Equal(got.(*Publish).Payload, pub.Payload) {
			t.Fatalf("%d: payload differs", i)
		}
	}
	if d.Version != Version5 {
		t.Fatalf("version %d", d.Version)
	}
	if _, err := d.Read(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

func TestDecoderFromClient(t *testing.T) {
	connect, _ := (&Connect{Version: Version5}).AppendTo(nil, 0)
	for _, p := range []Packet{&Connack{}, &Suback{PacketID: 1, ReasonCodes: []ReasonCode{0}}, &Pingresp{},
		&Connect{Version: Version5}, &Publish{Topic: "a", Properties: Properties{SubscriptionIdentifiers: []int{1}}}} {
		b, err := p.AppendTo(append([]byte(nil), connect...), Version5)
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecoder(bytes.NewReader(b))
		d.FromClient = true
		if _, err := d.Read(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Read(); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s from a client: %v", p.Type(), err)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		p    Packet
		v    byte
	}{
		{"publish qos1 id 0", &Publish{Topic: "a", QoS: 1}, Version311},
		{"publish qos 3", &Publish{Topic: "a", QoS: 3, PacketID: 1}, Version311},
		{"publish empty topic", &Publish{}, Version5},
		{"publish misplaced property", &Publish{Topic: "a", Properties: Properties{SessionExpiry: 1}}, Version5},
		{"publish topic too long", &Publish{Topic: strings.Repeat("a", 70000)}, Version311},
		{"subscribe sub ids", &Subscribe{PacketID: 1, Subscriptions: []Subscription{{Filter: "a"}}, Properties: Properties{SubscriptionIdentifiers: []int{1, 2}}}, Version5},
		{"subscribe none", &Subscribe{PacketID: 1}, Version311},
		{"auth v3", &Auth{}, Version311},
		{"connect level", &Connect{Version: 7}, 0},
		{"version 2", &Puback{PacketID: 1}, 2},
		{"puback id 0", &Puback{}, Version5},
	}
	for _, tc := range cases {
		if _, err := tc.p.AppendTo(nil, tc.v); !errors.Is(err, ErrEncode) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestReasonCodeString(t *testing.T) {
	if s := QuotaExceeded.String(); s != "quota exceeded" {
		t.Fatal(s)
	}
	if s := ReasonCode(0x42).String(); s != "reason code 0x42" {
		t.Fatal(s)
	}
	if V3ConnackCode(ServerBusy) != V3RefusedServerUnavailable || V3ConnackCode(ClientIdentifierNotValid) != V3RefusedIdentifierRejected {
		t.Fatal("v3 mapping")
	}
}

func TestCheckFromServer(t *testing.T) {
	for _, tc := range []struct {
		p  Packet
		v  byte
		ok bool
	}{
		{&Connack{}, Version5, true},
		{&Publish{Topic: "a"}, Version311, true},
		{&Disconnect{}, Version5, true},
		{&Disconnect{}, Version311, false},
		{&Subscribe{}, Version5, false},
		{&Pingreq{}, Version311, false},
		{&Connect{}, Version5, false},
	} {
		err := CheckFromServer(tc.p, tc.v)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrProtocol)) {
			t.Errorf("%s v%d: %v", tc.p.Type(), tc.v, err)
		}
	}
}

func TestWillPublishAndClone(t *testing.T) {
	c := &Connect{Version: Version5, ClientID: "c", Will: &Will{QoS: 1, Retain: true, Topic: "w", Payload: []byte("bye"),
		Properties: Properties{WillDelay: 30, PayloadFormat: 1, MessageExpiry: 9, ContentType: "t", ResponseTopic: "r",
			CorrelationData: []byte{7}, UserProperties: []UserProperty{{"k", "1"}, {"k", "2"}}}}}
	b, _ := c.AppendTo(nil, 0)
	d := NewDecoder(bytes.NewReader(b))
	p, err := d.Read()
	if err != nil {
		t.Fatal(err)
	}
	w := p.(*Connect).Will
	pub := w.Publish()
	pub.PacketID = 1
	enc, err := pub.AppendTo(nil, Version5)
	if err != nil {
		t.Fatalf("a will's PUBLISH does not encode: %v", err)
	}
	got, err := ReadPacket(bufio.NewReader(bytes.NewReader(enc)), Version5, 0)
	if err != nil {
		t.Fatal(err)
	}
	gp := got.(*Publish)
	want := c.Will.Properties
	want.WillDelay = 0
	if gp.Topic != "w" || gp.QoS != 1 || !gp.Retain || string(gp.Payload) != "bye" ||
		!equalIgnoringPresence(Publish{Properties: want}, Publish{Properties: gp.Properties}, Version5) {
		t.Fatalf("will published as %+v", gp)
	}
	// The clone does not share memory with the decoded packet.
	w.Payload[0] = 'X'
	w.Properties.CorrelationData[0] = 0
	w.Properties.UserProperties[0].Value = "changed"
	if string(pub.Payload) != "bye" || pub.Properties.CorrelationData[0] != 7 || pub.Properties.UserProperties[0].Value != "1" {
		t.Fatalf("the will's PUBLISH aliases the CONNECT: %+v", pub)
	}
	cl := gp.Clone()
	gp.Payload[0] = 'Y'
	gp.Properties.UserProperties[1].Key = "z"
	if string(cl.Payload) != "bye" || cl.Properties.UserProperties[1].Key != "k" {
		t.Fatalf("Clone aliases: %+v", cl)
	}
}
