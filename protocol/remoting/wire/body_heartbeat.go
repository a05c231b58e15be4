package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Consume types, message models and consume-from values of ConsumerData.
const (
	ConsumeActively  = "CONSUME_ACTIVELY"  // pull consumer
	ConsumePassively = "CONSUME_PASSIVELY" // push consumer
	ConsumePop       = "CONSUME_POP"

	Clustering   = "CLUSTERING"
	Broadcasting = "BROADCASTING"

	ConsumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   = "CONSUME_FROM_TIMESTAMP"
)

// Subscription expression types.
const (
	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"
)

// HeartbeatData is the JSON body of HEART_BEAT (34). Note the key
// "clientID" with a capital ID; decoding matches keys in any case, as
// encoding/json does.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
	// HeartbeatFingerprint and WithoutSub are sent by Java 5 clients only;
	// a missing fingerprint means a full heartbeat.
	HeartbeatFingerprint int64 `json:"heartbeatFingerprint,omitempty"`
	WithoutSub           bool  `json:"withoutSub,omitempty"`
}

// MarshalJSON writes empty sets as [].
func (h HeartbeatData) MarshalJSON() ([]byte, error) {
	type plain HeartbeatData
	p := plain(h)
	p.ProducerDataSet = nonNil(p.ProducerDataSet)
	p.ConsumerDataSet = nonNil(p.ConsumerDataSet)
	return json.Marshal(p)
}

// ProducerData names one producer group of the client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData describes one consumer group of the client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`      // ConsumeActively, ConsumePassively, ConsumePop
	MessageModel        string             `json:"messageModel"`     // Clustering or Broadcasting
	ConsumeFromWhere    string             `json:"consumeFromWhere"` // ConsumeFrom*
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// MarshalJSON writes an empty subscriptionDataSet as [].
func (c ConsumerData) MarshalJSON() ([]byte, error) {
	type plain ConsumerData
	p := plain(c)
	p.SubscriptionDataSet = nonNil(p.SubscriptionDataSet)
	return json.Marshal(p)
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"` // "*", "" (all), "a || b", or SQL92
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	ExpressionType  string   `json:"expressionType"` // ExpressionTag or ExpressionSQL92
}

// MarshalJSON writes empty sets as [].
func (s SubscriptionData) MarshalJSON() ([]byte, error) {
	type plain SubscriptionData
	p := plain(s)
	p.TagsSet = nonNil(p.TagsSet)
	p.CodeSet = nonNil(p.CodeSet)
	return json.Marshal(p)
}

// CodeSet holds the tag hash codes of a subscription. The Go client sends
// them as JSON strings, Java as numbers; both decode. They encode as
// strings, which both accept.
type CodeSet []int32

// MarshalJSON writes the codes as JSON strings.
func (c CodeSet) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(c)*13)
	b = append(b, '[')
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(v), 10)
		b = append(b, '"')
	}
	return append(b, ']'), nil
}

// UnmarshalJSON accepts an array of numbers or numeric strings, or null.
func (c *CodeSet) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw == nil {
		*c = nil
		return nil
	}
	out := make(CodeSet, 0, len(raw))
	for _, r := range raw {
		var s string
		if len(r) > 0 && r[0] == '"' {
			if err := json.Unmarshal(r, &s); err != nil {
				return err
			}
		} else {
			s = string(r)
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fmt.Errorf("codeSet entry %s: want an int32", r)
		}
		out = append(out, int32(n))
	}
	*c = out
	return nil
}

// TagHashCode returns the code of a tag as clients compute it: Java's
// String.hashCode over the UTF-8 bytes (equal to Java only for ASCII).
func TagHashCode(tag string) int32 {
	var h int32
	for i := 0; i < len(tag); i++ {
		h = 31*h + int32(tag[i])
	}
	return h
}
