package wire

import (
	"encoding/json"
	"fmt"
)

// DecodeJSONBody unmarshals a JSON body into v. Failures match
// ErrMalformed and name the Go type being decoded.
func DecodeJSONBody(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &DecodeError{Kind: ErrMalformed, Part: fmt.Sprintf("%T body", v), Offset: -1, Detail: err.Error()}
	}
	return nil
}

// EncodeJSONBody marshals v as compact JSON for a command body. The body
// types of this package write empty arrays and objects rather than null.
func EncodeJSONBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %T body: %w", v, err)
	}
	return b, nil
}

// MessageQueue identifies one queue of a topic on one broker.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// LockBatchRequestBody is the JSON body of LOCK_BATCH_MQ (41) and
// UNLOCK_BATCH_MQ (42).
type LockBatchRequestBody struct {
	ConsumerGroup string `json:"consumerGroup"`
	ClientID      string `json:"clientId"`
	// OnlyThisBroker is sent by Java clients only.
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []MessageQueue `json:"mqSet"`
}

// MarshalJSON writes mqSet as [] when empty.
func (b LockBatchRequestBody) MarshalJSON() ([]byte, error) {
	type plain LockBatchRequestBody
	p := plain(b)
	p.MQSet = nonNil(p.MQSet)
	return json.Marshal(p)
}

// LockBatchResponseBody is the JSON body of a LOCK_BATCH_MQ response: the
// queues the client now holds.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// MarshalJSON writes lockOKMQSet as [] when empty.
func (b LockBatchResponseBody) MarshalJSON() ([]byte, error) {
	type plain LockBatchResponseBody
	p := plain(b)
	p.LockOKMQSet = nonNil(p.LockOKMQSet)
	return json.Marshal(p)
}

// ConsumerListResponseBody is the JSON body of a
// GET_CONSUMER_LIST_BY_GROUP response. The list must contain the asking
// client's own id or the Go client's rebalance gives it no queues.
type ConsumerListResponseBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// MarshalJSON writes consumerIdList as [] when empty.
func (b ConsumerListResponseBody) MarshalJSON() ([]byte, error) {
	type plain ConsumerListResponseBody
	p := plain(b)
	p.ConsumerIDList = nonNil(p.ConsumerIDList)
	return json.Marshal(p)
}

// TopicListBody is the JSON body of a GET_ALL_TOPIC_LIST_FROM_NAMESERVER
// response.
type TopicListBody struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// MarshalJSON writes topicList as [] when empty.
func (b TopicListBody) MarshalJSON() ([]byte, error) {
	type plain TopicListBody
	p := plain(b)
	p.TopicList = nonNil(p.TopicList)
	return json.Marshal(p)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// GroupListBody is the JSON body of a QUERY_TOPIC_CONSUME_BY_WHO response.
type GroupListBody struct {
	GroupList []string `json:"groupList"`
}

// MarshalJSON writes groupList as [] when empty.
func (b GroupListBody) MarshalJSON() ([]byte, error) {
	type plain GroupListBody
	p := plain(b)
	p.GroupList = nonNil(p.GroupList)
	return json.Marshal(p)
}

// KVTable is the body of GET_KVLIST_BY_NAMESPACE, REGISTER_BROKER and
// GET_BROKER_RUNTIME_INFO responses (Java KVTable): {"table":{"key":"value"}}.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// MarshalJSON writes an empty table as {}.
func (t KVTable) MarshalJSON() ([]byte, error) {
	m := t.Table
	if m == nil {
		m = map[string]string{}
	}
	return json.Marshal(struct {
		Table map[string]string `json:"table"`
	}{m})
}
