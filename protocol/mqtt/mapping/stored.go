package mapping

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// Decoder turns stored records into Messages as FromRocketMQ does, but
// reads the properties of the contract in place, without decoding the
// record into a message.Message and its property map. It keeps the last
// topic name and publisher it made, so that a run of records of one MQTT
// topic and publisher shares their strings. The zero Decoder is ready;
// it is not safe for concurrent use.
type Decoder struct {
	nameKey   []byte // what name was made from: origin, or topic 0 tags
	byOrigin  bool   // whether nameKey is an origin
	name      string
	publisher string
}

// Decode decodes the stored record at the start of rec (see
// message.PeekStored) into m and returns its queue offset. The payload is
// appended to buf, which is returned; m.Payload aliases it (or the array
// an append moved it to), and nothing in m aliases rec. Errors wrap
// message.ErrMalformed.
func (d *Decoder) Decode(m *Message, rec, buf []byte) (int64, []byte, error) {
	h, err := message.PeekStored(rec)
	if err != nil {
		return 0, buf, err
	}
	var origin, tags, qos, publisher, retain, empty, users, format, ctype, rtopic, corr, expire []byte
	var hasQoS, hasFormat, hasCorr, hasExpire bool
	for b := h.Properties; len(b) > 0; {
		name, value, rest, ok := message.NextProperty(b)
		b = rest
		if !ok {
			continue
		}
		// The last of a repeated name wins, as in message.DecodeProperties.
		switch string(name) {
		case PropOriginTopic:
			origin = value
		case message.PropertyTags:
			tags = value
		case PropQoS:
			qos, hasQoS = value, true
		case PropClientID:
			publisher = value
		case PropRetain:
			retain = value
		case PropEmpty:
			empty = value
		case PropUserProps:
			users = value
		case PropPayloadFormat:
			format, hasFormat = value, true
		case PropContentType:
			ctype = value
		case PropResponseTopic:
			rtopic = value
		case PropCorrelationData:
			corr, hasCorr = value, true
		case PropExpireAt:
			expire, hasExpire = value, true
		}
	}
	*m = Message{
		Topic:         d.topic(h.Topic, tags, origin),
		QoS:           1,
		Retain:        string(retain) == "1",
		ContentType:   string(ctype),
		ResponseTopic: string(rtopic),
	}
	if len(publisher) > 0 {
		if d.publisher != string(publisher) {
			d.publisher = string(publisher)
		}
		m.Publisher = d.publisher
	}
	if len(h.Body) > 0 && string(empty) != "true" {
		at := len(buf)
		buf = append(buf, h.Body...)
		m.Payload = buf[at:len(buf):len(buf)]
	}
	if hasQoS {
		if q, err := strconv.Atoi(string(qos)); err == nil && q >= 0 && q <= 2 {
			m.QoS = byte(q)
		}
	}
	if len(users) > 0 {
		var pairs [][2]string
		if json.Unmarshal(users, &pairs) == nil {
			m.UserProperties = make([]UserProperty, len(pairs))
			for i, pr := range pairs {
				m.UserProperties[i] = UserProperty{pr[0], pr[1]}
			}
		}
	}
	if hasFormat {
		if v, err := strconv.Atoi(string(format)); err == nil && (v == 0 || v == 1) {
			m.PayloadFormat, m.HasPayloadFormat = byte(v), true
		}
	}
	if hasCorr {
		if b, err := base64.StdEncoding.DecodeString(string(corr)); err == nil {
			m.CorrelationData = b
		}
	}
	if hasExpire {
		if v, err := strconv.ParseInt(string(expire), 10, 64); err == nil && v > 0 {
			m.ExpireAt = time.UnixMilli(v)
		}
	}
	return h.QueueOffset, buf, nil
}

// topic returns Name of the record's topic, tags and origin, reusing the
// last one when it is made of the same bytes.
func (d *Decoder) topic(topic, tags, origin []byte) string {
	if len(origin) > 0 {
		if d.name != "" && d.byOrigin && bytes.Equal(d.nameKey, origin) {
			return d.name
		}
		d.nameKey, d.byOrigin = append(d.nameKey[:0], origin...), true
		d.name = string(origin)
		return d.name
	}
	// Not from MQTT (no origin): key on topic 0 tags, 0 being a byte no
	// topic holds.
	n := len(topic) + 1 + len(tags)
	if d.name != "" && !d.byOrigin && len(d.nameKey) == n && bytes.Equal(d.nameKey[:len(topic)], topic) &&
		d.nameKey[len(topic)] == 0 && bytes.Equal(d.nameKey[len(topic)+1:], tags) {
		return d.name
	}
	d.nameKey, d.byOrigin = append(append(append(d.nameKey[:0], topic...), 0), tags...), false
	d.name = Name(string(topic), string(tags), "")
	return d.name
}

// FromStored decodes one stored record with a fresh Decoder; the payload
// is a copy of the record's.
func FromStored(rec []byte) (*Message, int64, error) {
	var d Decoder
	m := new(Message)
	off, _, err := d.Decode(m, rec, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("mapping: %w", err)
	}
	return m, off, nil
}
