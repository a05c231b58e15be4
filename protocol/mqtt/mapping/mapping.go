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

// ToRocketMQ returns the message to store for m.
func ToRocketMQ(m *Message) (*message.Message, error) {
	topic, tag, err := Split(m.Topic)
	if err != nil {
		return nil, err
	}
	r := &message.Message{Topic: topic, Body: m.Payload, Properties: make(map[string]string, 4+len(m.UserProperties))}
	if tag != "" {
		r.SetTags(tag)
	}
	if len(m.Payload) == 0 {
		r.Body = []byte{0}
		r.Properties[PropEmpty] = "true"
	}
	r.Properties[PropOriginTopic] = m.Topic
	r.Properties[PropQoS] = strconv.Itoa(int(m.QoS))
	if m.Publisher != "" {
		r.Properties[PropClientID] = m.Publisher
	}
	if m.Retain {
		r.Properties[PropRetain] = "1"
	}
	if len(m.UserProperties) > 0 {
		pairs := make([][2]string, len(m.UserProperties))
		for i, p := range m.UserProperties {
			pairs[i] = [2]string{p.Key, p.Value}
		}
		b, _ := json.Marshal(pairs) // strings always marshal
		r.Properties[PropUserProps] = string(b)
		for _, p := range m.UserProperties {
			if _, dup := r.Properties[p.Key]; dup || p.Key == "" || reserved(p.Key) || strings.ContainsAny(p.Key+p.Value, "\x01\x02") {
				continue
			}
			r.Properties[p.Key] = p.Value
		}
	}
	if m.HasPayloadFormat {
		r.Properties[PropPayloadFormat] = strconv.Itoa(int(m.PayloadFormat))
	}
	if m.ContentType != "" {
		r.Properties[PropContentType] = m.ContentType
	}
	if m.ResponseTopic != "" {
		r.Properties[PropResponseTopic] = m.ResponseTopic
	}
	if m.CorrelationData != nil {
		r.Properties[PropCorrelationData] = base64.StdEncoding.EncodeToString(m.CorrelationData)
	}
	if !m.ExpireAt.IsZero() {
		r.Properties[PropExpireAt] = strconv.FormatInt(m.ExpireAt.UnixMilli(), 10)
	}
	if err := message.ValidateProperties(r.Properties); err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	return r, nil
}

// FromRocketMQ returns the MQTT message a stored message is delivered
// as. Values of the contract's properties that do not parse are ignored.
func FromRocketMQ(r *message.Message) *Message {
	p := r.Properties
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
