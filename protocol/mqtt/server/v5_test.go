package server_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/karmanmq/karman/engine/message"
)

func TestV5PublishSubscribe(t *testing.T) {
	b := startBroker(t, "", nil)
	sub := dialV5(t, b.addr, &paho.Connect{ClientID: "sub", CleanStart: true})
	sa := sub.sub("dev/+/temp", 2)
	if sa.Reasons[0] != 2 {
		t.Fatalf("SUBACK %v", sa.Reasons)
	}
	pub := dialV5(t, b.addr, &paho.Connect{ClientID: "pub", CleanStart: true})
	props := &paho.PublishProperties{
		ContentType: "text/plain", ResponseTopic: "dev/d1/resp", CorrelationData: []byte{1, 2},
		User: paho.UserProperties{{Key: "unit", Value: "C"}, {Key: "unit", Value: "K"}},
	}
	for q := byte(0); q <= 2; q++ {
		r := pub.pub(&paho.Publish{Topic: "dev/d1/temp", QoS: q, Payload: []byte{'0' + q}, Properties: props})
		if q > 0 && r.ReasonCode != 0 {
			t.Fatalf("QoS %d: reason %d", q, r.ReasonCode)
		}
	}
	pub.pub(&paho.Publish{Topic: "dev/d1/hum", QoS: 1, Payload: []byte("no")})
	got := sub.wait(3)
	for i, m := range got {
		if m.Topic != "dev/d1/temp" || m.QoS != byte(i) || !bytes.Equal(m.Payload, []byte{'0' + byte(i)}) {
			t.Errorf("message %d: %s QoS %d %q", i, m.Topic, m.QoS, m.Payload)
		}
		p := m.Properties
		if p == nil || p.ContentType != "text/plain" || p.ResponseTopic != "dev/d1/resp" || !bytes.Equal(p.CorrelationData, []byte{1, 2}) ||
			len(p.User) != 2 || p.User[0] != (paho.UserProperty{Key: "unit", Value: "C"}) || p.User[1].Value != "K" {
			t.Errorf("message %d properties %+v", i, p)
		}
	}
	sub.none(3, 200*time.Millisecond)

	// The mapping: stored in topic dev, tag d1/temp.
	ctx := context.Background()
	b.e.WaitDispatched(ctx)
	n := 0
	for q := int32(0); q < 8; q++ {
		res, err := b.e.Pull(ctx, "dev", q, 0, 32, nil)
		if err != nil {
			continue
		}
		for _, r := range res.Records {
			m, _, _ := message.DecodeStored(r)
			if m.Tags() == "d1/temp" && m.Property("originMqttTopic") == "dev/d1/temp" && m.Property("unit") == "C" {
				n++
			}
		}
		res.Release()
	}
	if n != 3 {
		t.Errorf("%d messages stored in dev with tag d1/temp, want 3", n)
	}
}

func TestV5AssignedClientIDAndRetained(t *testing.T) {
	b := startBroker(t, "", nil)
	pub := dialV5(t, b.addr, &paho.Connect{CleanStart: true})
	if pub.ack.Properties == nil || pub.ack.Properties.AssignedClientID == "" {
		t.Fatalf("no assigned client id: %+v", pub.ack.Properties)
	}
	pub.pub(&paho.Publish{Topic: "home/a", QoS: 1, Retain: true, Payload: []byte("ra")})
	pub.pub(&paho.Publish{Topic: "home/b", QoS: 0, Retain: true, Payload: []byte("rb")})
	pub.pub(&paho.Publish{Topic: "home/b", QoS: 1, Retain: true, Payload: nil}) // clears it

	sub := dialV5(t, b.addr, &paho.Connect{ClientID: "s", CleanStart: true})
	sub.sub("home/#", 1)
	got := sub.wait(1)
	if got[0].Topic != "home/a" || !got[0].Retain || string(got[0].Payload) != "ra" {
		t.Fatalf("retained: %s %v %q", got[0].Topic, got[0].Retain, got[0].Payload)
	}
	sub.none(1, 100*time.Millisecond)

	// Retained messages are on disk.
	b.restart()
	sub2 := dialV5(t, b.addr, &paho.Connect{ClientID: "s2", CleanStart: true})
	sub2.sub("home/+", 0)
	if got := sub2.wait(1); got[0].Topic != "home/a" || got[0].QoS != 0 {
		t.Fatalf("retained after restart: %s QoS %d", got[0].Topic, got[0].QoS)
	}
}
