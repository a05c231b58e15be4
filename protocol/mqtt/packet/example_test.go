package packet_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// A server reads the CONNECT (version 0: not negotiated yet), learns the
// level from it, then reads and answers in that level.
func Example() {
	var wire bytes.Buffer
	packet.Encode(&wire, &packet.Connect{Version: packet.Version5, ClientID: "sensor-1", CleanStart: true}, 0)
	packet.Encode(&wire, &packet.Publish{Topic: "room/1/temp", QoS: 1, PacketID: 7, Payload: []byte("21.5"),
		Properties: packet.Properties{UserProperties: []packet.UserProperty{{Key: "unit", Value: "C"}}}}, packet.Version5)

	d := packet.NewDecoder(&wire)
	d.FromClient = true
	d.MaxSize = 1 << 20
	for {
		p, err := d.Read()
		if err != nil {
			break
		}
		switch p := p.(type) {
		case *packet.Connect:
			fmt.Println("CONNECT level", p.Version, "client", p.ClientID)
		case *packet.Publish:
			ack, _ := (&packet.Puback{PacketID: p.PacketID}).AppendTo(nil, d.Version)
			fmt.Printf("PUBLISH %s %s %v, answer % x\n", p.Topic, p.Payload, p.Properties.UserProperties, ack)
		}
	}
	// Output:
	// CONNECT level 5 client sensor-1
	// PUBLISH room/1/temp 21.5 [{unit C}], answer 40 02 00 07
}

// A decoding error says what to answer: here a v5 DISCONNECT with reason
// code 0x90, because a client published to a wildcard.
func ExampleError() {
	b, _ := (&packet.Publish{Topic: "ok", Payload: []byte("x")}).AppendTo(nil, packet.Version5)
	b[5] = '+' // the topic becomes "o+"
	_, err := packet.Decode(b[0], b[2:], packet.Version5)
	var e *packet.Error
	if errors.As(err, &e) {
		fmt.Println(errors.Is(err, packet.ErrTopicNameInvalid), e.Code)
		d, _ := (&packet.Disconnect{ReasonCode: e.Code}).AppendTo(nil, packet.Version5)
		fmt.Printf("% x\n", d)
	}
	// Output:
	// true topic name invalid
	// e0 01 90
}
