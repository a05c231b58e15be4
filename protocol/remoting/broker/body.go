package broker

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// JSON bodies of the administration requests, with the field names of the
// Java classes they mirror so that RocketMQ tools read them. Topic
// configurations are the name server's namesrv.TopicConfig, which
// registrations carry too. Maps keyed by
// a message queue, which Java writes with non-standard object keys, are
// written as standard JSON whose keys are strings holding the queue's JSON
// ({"topic":..,"brokerName":..,"queueId":..}).

// TopicConfigWrapper is the body of a GET_ALL_TOPIC_CONFIG response (Java
// TopicConfigSerializeWrapper).
type TopicConfigWrapper struct {
	TopicConfigTable map[string]namesrv.TopicConfig `json:"topicConfigTable"`
	DataVersion      namesrv.DataVersion            `json:"dataVersion"`
}

// SubscriptionGroupConfig is one consumer group's configuration (Java
// SubscriptionGroupConfig): the body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// and an entry of GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
type SubscriptionGroupConfig struct {
	GroupName              string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeFromMinEnable   bool   `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly  bool   `json:"consumeMessageOrderly"`
	// FIFO is accepted as a synonym of ConsumeMessageOrderly on input.
	FIFO           bool  `json:"fifo,omitempty"`
	RetryQueueNums int32 `json:"retryQueueNums"`
	// RetryMaxTimes is how many times a failed message is redelivered
	// before it goes to the group's dead-letter topic.
	RetryMaxTimes                  int32             `json:"retryMaxTimes"`
	GroupRetryPolicy               *GroupRetryPolicy `json:"groupRetryPolicy,omitempty"`
	BrokerID                       int64             `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	GroupSysFlag                   int32             `json:"groupSysFlag"`
	ConsumeTimeoutMinute           int32             `json:"consumeTimeoutMinute"`
	Attributes                     map[string]string `json:"attributes,omitempty"`
}

// defaultGroupConfig returns Java's defaults, which a decoded body keeps
// for the fields it leaves out.
func defaultGroupConfig() SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIdsChangedEnable: true,
		ConsumeTimeoutMinute:           15,
	}
}

// Retry policy types of GroupRetryPolicy.
const (
	RetryPolicyCustomized  = "CUSTOMIZED"
	RetryPolicyExponential = "EXPONENTIAL"
)

// GroupRetryPolicy is Java's GroupRetryPolicy: the delays before
// redeliveries of a group's failed messages.
type GroupRetryPolicy struct {
	Type                   string                  `json:"type"`
	ExponentialRetryPolicy *ExponentialRetryPolicy `json:"exponentialRetryPolicy,omitempty"`
	CustomizedRetryPolicy  *CustomizedRetryPolicy  `json:"customizedRetryPolicy,omitempty"`
}

// ExponentialRetryPolicy waits min(Max, Initial × Multiplier^n) ms before
// redelivery n+1.
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// CustomizedRetryPolicy lists delays in ms, aligned with the delay levels
// as in Java: redelivery n+1 (n ≥ 0 earlier redeliveries) waits
// Next[min(n+2, len-1)].
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// SubscriptionGroupWrapper is the body of a GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// response.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	DataVersion            namesrv.DataVersion                `json:"dataVersion"`
}

// Connection is one client connection of a consumer group (Java
// Connection).
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// ConsumerConnection is the body of a GET_CONSUMER_CONNECTION_LIST response.
type ConsumerConnection struct {
	ConnectionSet     []Connection                     `json:"connectionSet"`
	SubscriptionTable map[string]wire.SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                           `json:"consumeType"`
	MessageModel      string                           `json:"messageModel"`
	ConsumeFromWhere  string                           `json:"consumeFromWhere"`
}

// ProducerConnection is the body of a GET_PRODUCER_CONNECTION_LIST
// response.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// OffsetWrapper is a group's position in one queue (Java OffsetWrapper).
// The lag is BrokerOffset - ConsumerOffset.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`   // the queue's max offset
	ConsumerOffset int64 `json:"consumerOffset"` // the group's committed offset
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"` // store time of the last consumed message, ms
}

// ConsumeStats is the body of a GET_CONSUME_STATS response.
type ConsumeStats struct {
	OffsetTable map[wire.MessageQueue]OffsetWrapper
	ConsumeTPS  float64
}

type consumeStatsJSON struct {
	OffsetTable map[string]OffsetWrapper `json:"offsetTable"`
	ConsumeTPS  float64                  `json:"consumeTps"`
}

// MarshalJSON writes the offset table with queue keys as strings.
func (s ConsumeStats) MarshalJSON() ([]byte, error) {
	t, err := queueKeyed(s.OffsetTable)
	if err != nil {
		return nil, err
	}
	return json.Marshal(consumeStatsJSON{OffsetTable: t, ConsumeTPS: s.ConsumeTPS})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *ConsumeStats) UnmarshalJSON(data []byte) error {
	var raw consumeStatsJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	t, err := unqueueKeyed(raw.OffsetTable)
	if err != nil {
		return err
	}
	s.OffsetTable, s.ConsumeTPS = t, raw.ConsumeTPS
	return nil
}

// TopicOffset is one queue's bounds (Java TopicOffset).
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"` // store time of the last message, ms
}

// TopicStatsTable is the body of a GET_TOPIC_STATS_INFO response.
type TopicStatsTable struct {
	OffsetTable map[wire.MessageQueue]TopicOffset
}

type topicStatsJSON struct {
	OffsetTable map[string]TopicOffset `json:"offsetTable"`
}

// MarshalJSON writes the offset table with queue keys as strings.
func (s TopicStatsTable) MarshalJSON() ([]byte, error) {
	t, err := queueKeyed(s.OffsetTable)
	if err != nil {
		return nil, err
	}
	return json.Marshal(topicStatsJSON{OffsetTable: t})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *TopicStatsTable) UnmarshalJSON(data []byte) error {
	var raw topicStatsJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	t, err := unqueueKeyed(raw.OffsetTable)
	if err != nil {
		return err
	}
	s.OffsetTable = t
	return nil
}

func queueKeyed[V any](m map[wire.MessageQueue]V) (map[string]V, error) {
	out := make(map[string]V, len(m))
	for q, v := range m {
		k, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		out[string(k)] = v
	}
	return out, nil
}

func unqueueKeyed[V any](m map[string]V) (map[wire.MessageQueue]V, error) {
	out := make(map[wire.MessageQueue]V, len(m))
	for k, v := range m {
		var q wire.MessageQueue
		if err := json.Unmarshal([]byte(k), &q); err != nil {
			return nil, fmt.Errorf("offset table key %q: %w", k, err)
		}
		out[q] = v
	}
	return out, nil
}

// resetOffsetBody encodes the body of RESET_CONSUMER_CLIENT_OFFSET:
// {"offsetTable":[[<queue>,<offset>],...]}, the array-of-pairs form that
// clients parse (Java's gson form; the Go client splits it as text, so it
// must stay compact).
func resetOffsetBody(broker, topic string, offsets map[int32]int64) ([]byte, error) {
	type pair [2]any
	pairs := make([]pair, 0, len(offsets))
	for _, q := range slices.Sorted(maps.Keys(offsets)) {
		pairs = append(pairs, pair{wire.MessageQueue{Topic: topic, BrokerName: broker, QueueID: q}, offsets[q]})
	}
	return json.Marshal(struct {
		OffsetTable []pair `json:"offsetTable"`
	}{pairs})
}

// nowVersion returns a data version stamped now.
func nowVersion() namesrv.DataVersion {
	return namesrv.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: 1}
}
