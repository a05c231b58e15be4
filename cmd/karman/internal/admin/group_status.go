package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// ConsumerStatus is what one online consumer says about itself when a
// broker it is connected to asks it (GET_CONSUMER_RUNNING_INFO, passed on
// by the broker): what mqadmin consumerStatus shows.
type ConsumerStatus struct {
	ClientID string `json:"clientId"`
	// Broker is the broker that asked the consumer.
	Broker string `json:"broker"`
	// Properties are the client's settings under Java's names
	// (PROP_CONSUME_TYPE, PROP_CLIENT_VERSION, PROP_CONSUMER_START_TIMESTAMP, …).
	Properties    map[string]string `json:"properties"`
	Subscriptions []Subscription    `json:"subscriptions"`
	// Queues are the queues assigned to the consumer, with what it holds
	// of each.
	Queues []ProcessQueue `json:"queues"`
	// Rates are the consumer's recent rates per topic.
	Rates []TopicRates `json:"rates"`
	// Error says why the consumer's status is missing, when it is.
	Error string `json:"error,omitempty"`
}

// ProcessQueue is a consumer's account of one queue assigned to it.
type ProcessQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	// CommitOffset is the offset the consumer will commit next.
	CommitOffset int64 `json:"commitOffset"`
	// CachedMsgCount and CachedMsgSizeInMiB are the messages pulled and
	// not yet consumed.
	CachedMsgCount     int   `json:"cachedMsgCount"`
	CachedMsgSizeInMiB int64 `json:"cachedMsgSizeInMiB"`
	// Locked: an orderly consumer holds the queue's lock.
	Locked  bool `json:"locked"`
	Dropped bool `json:"dropped"`
	// LastPullTimestamp and LastConsumeTimestamp are in ms since the epoch.
	LastPullTimestamp    int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp int64 `json:"lastConsumeTimestamp"`
}

// TopicRates are a consumer's recent rates in one topic: per second, and
// response times in ms.
type TopicRates struct {
	Topic             string  `json:"topic"`
	PullTPS           float64 `json:"pullTPS"`
	PullRT            float64 `json:"pullRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// runningInfo is Java's ConsumerRunningInfo, as Java and Go clients write
// it (mqTable keyed by queue objects).
type runningInfo struct {
	Properties      map[string]string `json:"properties"`
	SubscriptionSet []struct {
		Topic          string `json:"topic"`
		SubString      string `json:"subString"`
		ExpressionType string `json:"expressionType"`
	} `json:"subscriptionSet"`
	MQTable     queueTable[ProcessQueue] `json:"mqTable"`
	StatusTable map[string]TopicRates    `json:"statusTable"`
}

// GroupStatus asks every online consumer of group (or only clientID, when
// given) for its status, through a broker it is connected to. A consumer
// that does not answer gets its Error set; no consumer online is
// ErrConsumerOffline.
func (c *Client) GroupStatus(ctx context.Context, group, clientID string) ([]ConsumerStatus, error) {
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	asked := map[string]bool{}
	out := []ConsumerStatus{}
	for _, b := range masters {
		members, err := c.membersOn(ctx, b, group)
		if err != nil {
			return nil, err
		}
		for _, id := range slices.Sorted(maps.Keys(members)) {
			if asked[id] || clientID != "" && id != clientID {
				continue
			}
			asked[id] = true
			out = append(out, c.consumerStatus(ctx, b, group, id))
		}
	}
	if len(out) == 0 {
		if clientID != "" {
			return nil, errorf(ErrConsumerOffline, "consumer %s of group %s is not online", clientID, group)
		}
		return nil, errorf(ErrConsumerOffline, "no consumer of group %s is online", group)
	}
	slices.SortFunc(out, func(a, b ConsumerStatus) int { return strings.Compare(a.ClientID, b.ClientID) })
	return out, nil
}

// consumerStatus asks consumer id of group, through broker b.
func (c *Client) consumerStatus(ctx context.Context, b Broker, group, id string) ConsumerStatus {
	s := ConsumerStatus{ClientID: id, Broker: b.Name, Properties: map[string]string{}, Subscriptions: []Subscription{}, Queues: []ProcessQueue{}, Rates: []TopicRates{}}
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetConsumerRunningInfo, &wire.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: id}, nil))
	var info runningInfo
	switch {
	case err == nil && len(resp.Body) == 0:
		// The Go client answers SUCCESS without a body when it cannot
		// encode its rates, as in its first seconds.
		hint := ""
		if strings.Contains(resp.Remark, "NaN") {
			hint = " (a Go consumer cannot report its rates in its first 10 to 20 seconds: ask again)"
		}
		err = fmt.Errorf("%s answered %s for consumer %s without a body: %s%s", t, wire.GetConsumerRunningInfo, id, orNone(resp.Remark), hint)
	case err == nil:
		err = decodeBody(t, wire.GetConsumerRunningInfo, resp.Body, &info)
	}
	if err != nil {
		s.Error = err.Error()
		return s
	}
	maps.Copy(s.Properties, info.Properties)
	for _, sub := range info.SubscriptionSet {
		s.Subscriptions = append(s.Subscriptions, Subscription{Topic: sub.Topic, ExpressionType: sub.ExpressionType, Expression: sub.SubString})
	}
	slices.SortFunc(s.Subscriptions, func(a, b Subscription) int { return strings.Compare(a.Topic, b.Topic) })
	for _, q := range sortedQueues(info.MQTable) {
		pq := info.MQTable[q]
		pq.Topic, pq.BrokerName, pq.QueueID = q.Topic, q.BrokerName, q.QueueID
		s.Queues = append(s.Queues, pq)
	}
	for _, topic := range slices.Sorted(maps.Keys(info.StatusTable)) {
		r := info.StatusTable[topic]
		r.Topic = topic
		s.Rates = append(s.Rates, r)
	}
	return s
}

func orNone(remark string) string {
	if remark == "" {
		return "no remark"
	}
	return remark
}
