package mapping

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine/message"
)

// Property names of the contract (see the package comment).
const (
	PropOriginTopic     = "originMqttTopic"
	PropQoS             = "qosLevel"
	PropUserProps       = "mqttUserProps"
	PropPayloadFormat   = "mqttPayloadFormat"
	PropContentType     = "mqttContentType"
	PropResponseTopic   = "mqttResponseTopic"
	PropCorrelationData = "mqttCorrelationData"
	PropExpireAt        = "mqttExpireAt"
	PropClientID        = "mqttClientId"
	PropEmpty           = "IS_EMPTY_MSG"
	PropRetain          = "mqttRetain"
)

// ErrTopic is returned for an MQTT topic whose first level is not a
// RocketMQ topic the message can be stored in.
var ErrTopic = errors.New("mapping: topic cannot be stored")

// UserProperty is one MQTT 5 user property.
type UserProperty struct {
	Key, Value string
}

// Message is an application message as MQTT sees it.
type Message struct {
	Topic   string
	Payload []byte
	QoS     byte
	Retain  bool

	// MQTT 5 properties; HasPayloadFormat tells whether the publisher
	// sent a payload format indicator.
	PayloadFormat    byte
	HasPayloadFormat bool
	ContentType      string
	ResponseTopic    string
	CorrelationData  []byte
	UserProperties   []UserProperty
	// ExpireAt is when the message expires; zero: never.
	ExpireAt time.Time

	// Publisher is the client id of the publisher, "" when unknown.
	Publisher string
}

// Split returns the RocketMQ topic and tag an MQTT topic is stored under.
func Split(mqttTopic string) (topic, tag string, err error) {
	topic, tag, _ = strings.Cut(mqttTopic, "/")
	if err := message.ValidateUserTopic(topic); err != nil {
		return "", "", fmt.Errorf("%w: first level of %q: %w", ErrTopic, mqttTopic, err)
	}
	return topic, tag, nil
}

// Name returns the MQTT topic a stored message reaches subscribers under:
// origin (originMqttTopic) when set, else topic/tags, else topic.
func Name(topic, tags, origin string) string {
	switch {
	case origin != "":
		return origin
	case tags != "":
		return topic + "/" + tags
	}
	return topic
}

// reserved reports whether a user property may not become a RocketMQ
// property of the same name.
func reserved(k string) bool {
	if strings.HasPrefix(k, "mqtt") || k == PropOriginTopic || k == PropQoS || k == PropEmpty {
		return true
	}
	// RocketMQ's own properties are named in upper case (TAGS, KEYS,
	// DELAY, INNER_MULTI_DISPATCH, __STARTDELIVERTIME, ...).
	for _, c := range k {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// ToRocketMQ returns the message to store for m: its properties in
// their encoded form (EncodedProperties, see Encode), its body m.Payload.
func ToRocketMQ(m *Message) (*message.Message, error) {
	r := &message.Message{}
	if _, err := Encode(r, m, nil); err != nil {
		return nil, err
	}
	return r, nil
}

// Encode fills r with the message to store for m and returns buf with
// r's encoded properties appended: r.EncodedProperties aliases buf's
// new bytes (or the array an append moved them to), r.Body aliases
// m.Payload. No map is made, and a message without user properties costs
// no allocation beyond buf's growth. The properties are written in the
// encoded form the engine stores as it is (name 0x01 value 0x02), each
// name once; a name or value holding a separator byte, or properties
// longer than message.MaxPropertiesSize, are refused with the errors of
// message.ValidateProperties.
func Encode(r *message.Message, m *Message, buf []byte) ([]byte, error) {
	topic, tag, err := Split(m.Topic)
	if err != nil {
		return buf, err
	}
	*r = message.Message{Topic: topic, Body: m.Payload}
	start := len(buf)
	e := encoder{b: buf}
	if tag != "" {
		e.add(message.PropertyTags, tag)
	}
	if len(m.Payload) == 0 {
		r.Body = []byte{0}
		e.add(PropEmpty, "true")
	}
	e.add(PropOriginTopic, m.Topic)
	e.addInt(PropQoS, int64(m.QoS))
	if m.Publisher != "" {
		e.add(PropClientID, m.Publisher)
	}
	if m.Retain {
		e.add(PropRetain, "1")
	}
	if len(m.UserProperties) > 0 {
		pairs := make([][2]string, len(m.UserProperties))
		for i, p := range m.UserProperties {
			pairs[i] = [2]string{p.Key, p.Value}
		}
		b, _ := json.Marshal(pairs) // strings always marshal; JSON escapes the separators
		e.add(PropUserProps, string(b))
	users:
		for i, p := range m.UserProperties {
			if p.Key == "" || reserved(p.Key) || strings.ContainsAny(p.Key, "\x01\x02") || strings.ContainsAny(p.Value, "\x01\x02") {
				continue
			}
			for _, q := range m.UserProperties[:i] { // the first of duplicates
				if q.Key == p.Key && !strings.ContainsAny(q.Value, "\x01\x02") {
					continue users
				}
			}
			e.add(p.Key, p.Value)
		}
	}
	if m.HasPayloadFormat {
		e.addInt(PropPayloadFormat, int64(m.PayloadFormat))
	}
	if m.ContentType != "" {
		e.add(PropContentType, m.ContentType)
	}
	if m.ResponseTopic != "" {
		e.add(PropResponseTopic, m.ResponseTopic)
	}
	if m.CorrelationData != nil {
		e.add(PropCorrelationData, base64.StdEncoding.EncodeToString(m.CorrelationData))
	}
	if !m.ExpireAt.IsZero() {
		e.addInt(PropExpireAt, m.ExpireAt.UnixMilli())
	}
	if e.err == nil && len(e.b)-start > message.MaxPropertiesSize {
		e.err = fmt.Errorf("%w: %d bytes encoded, limit %d", message.ErrPropertiesTooLarge, len(e.b)-start, message.MaxPropertiesSize)
	}
	if e.err != nil {
		return buf, fmt.Errorf("mapping: %w", e.err)
	}
	r.EncodedProperties = e.b[start:len(e.b):len(e.b)]
	return e.b, nil
}

// encoder appends properties in their encoded form; the first name or
// value that cannot be encoded is its error.
type encoder struct {
	b   []byte
	err error
}

func (e *encoder) add(name, value string) {
	if strings.IndexByte(value, 1) >= 0 || strings.IndexByte(value, 2) >= 0 {
		if e.err == nil {
			e.err = fmt.Errorf("%w: value of %q contains a separator byte", message.ErrInvalidProperty, name)
		}
		return
	}
	e.b = append(e.b, name...)
	e.b = append(e.b, 1)
	e.b = append(e.b, value...)
	e.b = append(e.b, 2)
}

func (e *encoder) addInt(name string, v int64) {
	e.b = append(e.b, name...)
	e.b = append(e.b, 1)
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, 2)
}

// FromRocketMQ returns the MQTT message a stored message is delivered
// as. Values of the contract's properties that do not parse are ignored.
func FromRocketMQ(r *message.Message) *Message {
	p := r.Properties
	if p == nil && len(r.EncodedProperties) > 0 {
		p, _ = message.DecodeProperties(r.EncodedProperties)
	}
	m := &Message{
		Topic:     Name(r.Topic, r.Tags(), p[PropOriginTopic]),
		Payload:   r.Body,
		QoS:       1,
		Publisher: p[PropClientID],
		Retain:    p[PropRetain] == "1",
	}
	if p[PropEmpty] == "true" {
		m.Payload = nil
	}
	if v, ok := p[PropQoS]; ok {
		if q, err := strconv.Atoi(v); err == nil && q >= 0 && q <= 2 {
			m.QoS = byte(q)
		}
	}
	if v := p[PropUserProps]; v != "" {
		var pairs [][2]string
		if json.Unmarshal([]byte(v), &pairs) == nil {
			m.UserProperties = make([]UserProperty, len(pairs))
			for i, pr := range pairs {
				m.UserProperties[i] = UserProperty{pr[0], pr[1]}
			}
		}
	}
	// Absent properties are not parsed: a failed parse allocates its
	// error, and this runs for every message delivered.
	if s, ok := p[PropPayloadFormat]; ok {
		if v, err := strconv.Atoi(s); err == nil && (v == 0 || v == 1) {
			m.PayloadFormat, m.HasPayloadFormat = byte(v), true
		}
	}
	m.ContentType = p[PropContentType]
	m.ResponseTopic = p[PropResponseTopic]
	if v, ok := p[PropCorrelationData]; ok {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			m.CorrelationData = b
		}
	}
	if s, ok := p[PropExpireAt]; ok {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v > 0 {
			m.ExpireAt = time.UnixMilli(v)
		}
	}
	return m
}

// stored is the encoding of a Message kept as engine state (retained
// messages, wills).
type stored struct {
	T  string      `json:"t"`
	P  []byte      `json:"p,omitempty"`
	Q  byte        `json:"q,omitempty"`
	R  bool        `json:"r,omitempty"`
	F  *byte       `json:"f,omitempty"`
	CT string      `json:"ct,omitempty"`
	RT string      `json:"rt,omitempty"`
	CD []byte      `json:"cd,omitempty"`
	U  [][2]string `json:"u,omitempty"`
	E  int64       `json:"e,omitempty"`
	C  string      `json:"c,omitempty"`
}

// Marshal encodes m for State.
func Marshal(m *Message) []byte {
	s := stored{T: m.Topic, P: m.Payload, Q: m.QoS, R: m.Retain, CT: m.ContentType, RT: m.ResponseTopic, CD: m.CorrelationData, C: m.Publisher}
	if m.HasPayloadFormat {
		f := m.PayloadFormat
		s.F = &f
	}
	for _, p := range m.UserProperties {
		s.U = append(s.U, [2]string{p.Key, p.Value})
	}
	if !m.ExpireAt.IsZero() {
		s.E = m.ExpireAt.UnixMilli()
	}
	b, _ := json.Marshal(s) // no type in stored fails to marshal
	return b
}

// Unmarshal decodes what Marshal encoded.
func Unmarshal(b []byte) (*Message, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("mapping: decode stored message: %w", err)
	}
	m := &Message{Topic: s.T, Payload: s.P, QoS: s.Q, Retain: s.R, ContentType: s.CT, ResponseTopic: s.RT, CorrelationData: s.CD, Publisher: s.C}
	if s.F != nil {
		m.PayloadFormat, m.HasPayloadFormat = *s.F, true
	}
	for _, p := range s.U {
		m.UserProperties = append(m.UserProperties, UserProperty{p[0], p[1]})
	}
	if s.E != 0 {
		m.ExpireAt = time.UnixMilli(s.E)
	}
	return m, nil
}
