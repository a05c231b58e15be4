package message

import (
	"fmt"
	"strconv"
	"strings"
)

// Property returns the value of the property name, or "" when it is absent.
func (m *Message) Property(name string) string {
	v, _ := m.LookupProperty(name)
	return v
}

// LookupProperty returns the value of the property name and whether the
// message has it, from Properties or, when that is nil, from
// EncodedProperties.
func (m *Message) LookupProperty(name string) (string, bool) {
	if m.Properties == nil && len(m.EncodedProperties) > 0 {
		v, ok := LookupProperty(m.EncodedProperties, name)
		return string(v), ok
	}
	v, ok := m.Properties[name]
	return v, ok
}

// LoadProperties decodes EncodedProperties into Properties, when
// Properties is nil, and clears EncodedProperties.
func (m *Message) LoadProperties() {
	if m.EncodedProperties == nil {
		return
	}
	if m.Properties == nil {
		m.Properties, _ = DecodeProperties(m.EncodedProperties)
	}
	m.EncodedProperties = nil
}

// SetProperty sets the property name to value, allocating Properties when
// it is nil.
func (m *Message) SetProperty(name, value string) {
	m.LoadProperties()
	if m.Properties == nil {
		m.Properties = make(map[string]string, 4)
	}
	m.Properties[name] = value
}

// ClearProperty removes the property name.
func (m *Message) ClearProperty(name string) {
	m.LoadProperties()
	delete(m.Properties, name)
}

// setOrClear sets the property, or removes it when value is empty.
func (m *Message) setOrClear(name, value string) {
	if value == "" {
		m.ClearProperty(name)
		return
	}
	m.SetProperty(name, value)
}

// Tags returns the message tag (PropertyTags), or "" when it has none.
func (m *Message) Tags() string {
	return m.Property(PropertyTags)
}

// SetTags sets the message tag; an empty tag removes the property.
func (m *Message) SetTags(tags string) {
	m.setOrClear(PropertyTags, tags)
}

// Keys returns the business keys of the message (PropertyKeys split on
// spaces, empty keys dropped), or nil when it has none.
func (m *Message) Keys() []string {
	s := m.Property(PropertyKeys)
	if s == "" {
		return nil
	}
	var keys []string
	for k := range strings.SplitSeq(s, KeySeparator) {
		if k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// SetKeys sets the business keys, joined with spaces; no keys removes the
// property. A key containing a space reads back as several keys.
func (m *Message) SetKeys(keys []string) {
	m.setOrClear(PropertyKeys, strings.Join(keys, KeySeparator))
}

// UniqKey returns the client message id (PropertyUniqKey), or "".
func (m *Message) UniqKey() string {
	return m.Property(PropertyUniqKey)
}

// SetUniqKey sets the client message id; an empty id removes the property.
func (m *Message) SetUniqKey(id string) {
	m.setOrClear(PropertyUniqKey, id)
}

// ID returns the message id a RocketMQ client shows for the message: the
// client message id when there is one, otherwise the offset message id of
// StoreHost and CommitLogOffset.
func (m *Message) ID() string {
	if id := m.UniqKey(); id != "" {
		return id
	}
	return OffsetID(m.StoreHost, m.CommitLogOffset)
}

// DelayLevel returns the delay level (PropertyDelayLevel). It is 0 when the
// property is absent; an error wrapping ErrInvalidProperty reports a value
// that is not a decimal integer. Levels are not range-checked: the broker
// decides what to do with levels below 1 or above its highest level.
func (m *Message) DelayLevel() (int, error) {
	s, ok := m.LookupProperty(PropertyDelayLevel)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not an integer", ErrInvalidProperty, PropertyDelayLevel, s)
	}
	return n, nil
}

// SetDelayLevel sets the delay level; level 0 removes the property.
func (m *Message) SetDelayLevel(level int) {
	if level == 0 {
		m.ClearProperty(PropertyDelayLevel)
		return
	}
	m.SetProperty(PropertyDelayLevel, strconv.Itoa(level))
}

// IsTransactionPrepared reports whether the producer marked the message as
// a transactional half message (PropertyTransactionPrepared is "true", in
// any case, as Java's Boolean.parseBoolean reads it).
func (m *Message) IsTransactionPrepared() bool {
	return strings.EqualFold(m.Property(PropertyTransactionPrepared), "true")
}

// DeadLetterOrigin returns the topic a dead letter was consumed from,
// where resending puts it back: its DLQ_ORIGIN_TOPIC property, else its
// RETRY_TOPIC; empty when it has neither.
func (m *Message) DeadLetterOrigin() string {
	if t := m.Properties[PropertyDLQOriginTopic]; t != "" {
		return t
	}
	return m.Properties[PropertyRetryTopic]
}
