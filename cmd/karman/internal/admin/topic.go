package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Topic message types (RocketMQ 5's "message.type" topic attribute).
var MessageTypes = []string{"NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"}

// attrMessageType is the topic attribute holding the message type.
const attrMessageType = "message.type"

// DefaultQueues is the queue count topic create uses when none is given
// (RocketMQ's mqadmin default).
const DefaultQueues = 8

// routePoll is how often a change waits for the name servers to route it.
const routePoll = 50 * time.Millisecond

// ParseMessageType checks a message type name, in any case, and returns
// it in upper case.
func ParseMessageType(s string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if slices.Contains(MessageTypes, u) {
		return u, nil
	}
	return "", invalidf("unknown message type %q (want %s)", s, strings.Join(MessageTypes, ", "))
}

// ParsePerm reads a topic permission: "rw" (read and write), "r" or "w".
func ParsePerm(s string) (int32, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "rw", "wr":
		return wire.PermRead | wire.PermWrite, nil
	case "r":
		return wire.PermRead, nil
	case "w":
		return wire.PermWrite, nil
	}
	return 0, invalidf("unknown permission %q (want rw, r or w)", s)
}

// FormatPerm writes a permission as letters: r (read), w (write), x
// (inherit: a template for auto-created topics); "-" for none.
func FormatPerm(p int32) string {
	var b strings.Builder
	if p&wire.PermRead != 0 {
		b.WriteByte('r')
	}
	if p&wire.PermWrite != 0 {
		b.WriteByte('w')
	}
	if p&wire.PermInherit != 0 {
		b.WriteByte('x')
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// IsSystemTopic reports whether a topic is one the brokers keep for
// themselves or for consumer groups: RocketMQ's system topics, retry and
// dead-letter topics, request/reply topics, and (as Java brokers register
// them) topics named after a cluster or broker in names.
func IsSystemTopic(topic string, names map[string]bool) bool {
	return message.IsSystemTopic(topic) || message.IsRetryTopic(topic) || message.IsDLQTopic(topic) ||
		strings.HasSuffix(topic, message.ReplyTopicSuffix) || names[topic]
}

// TopicSpec describes a topic to create, or the changes to make to one.
type TopicSpec struct {
	Name string
	// Queues is the number of read and write queues on each broker. 0
	// means DefaultQueues on create and "unchanged" on update.
	Queues int32
	// Type is a message type of MessageTypes; "" sets none on create and
	// leaves the type unchanged on update.
	Type string
	// Perm is wire.PermRead|wire.PermWrite or one of them; 0 means read
	// and write on create and "unchanged" on update.
	Perm int32
	// Cluster limits create to one cluster; empty means the only one.
	Cluster string
}

// TopicChange reports a created or updated topic.
type TopicChange struct {
	Topic   string   `json:"topic"`
	Brokers []Broker `json:"brokers"` // the masters that applied the change
	// Routed is true once the name servers route the topic as changed; a
	// change they have not picked up when the timeout ends is still made.
	Routed bool `json:"routed"`
}

// Route returns a topic's route from the name servers.
func (c *Client) Route(ctx context.Context, topic string) (*wire.TopicRouteData, error) {
	resp, ns, err := c.namesrvInvoke(ctx, wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: topic, AcceptStandardJSONOnly: true})
	if HasCode(err, wire.TopicNotExist) {
		return nil, errorf(ErrTopicNotFound, "topic %s not found: no name server routes it", topic)
	}
	if err != nil {
		return nil, err
	}
	route, err := wire.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, badBody(ns, wire.GetRouteInfoByTopic, err)
	}
	return route, nil
}

// routeMasters returns the master of every broker that has queues of the
// topic in route, in broker-name order, with that broker's queue data.
func routeMasters(route *wire.TopicRouteData) ([]Broker, map[string]wire.QueueData) {
	qd := map[string]wire.QueueData{}
	for _, q := range route.QueueDatas {
		qd[q.BrokerName] = q
	}
	var out []Broker
	for _, bd := range route.BrokerDatas {
		addr, ok := bd.BrokerAddrs[wire.MasterID]
		if _, has := qd[bd.BrokerName]; !ok || !has {
			continue
		}
		out = append(out, Broker{Cluster: bd.Cluster, Name: bd.BrokerName, ID: wire.MasterID, Addr: addr})
	}
	slices.SortFunc(out, func(a, b Broker) int { return strings.Compare(a.Name, b.Name) })
	return out, qd
}

func createHeader(topic string, read, write, perm int32, typ string) *wire.CreateTopicRequestHeader {
	h := &wire.CreateTopicRequestHeader{
		Topic:           topic,
		DefaultTopic:    message.TopicAutoCreate,
		ReadQueueNums:   read,
		WriteQueueNums:  write,
		Perm:            perm,
		TopicFilterType: wire.TopicFilterSingleTag,
		Order:           typ == "FIFO",
	}
	if typ != "" {
		h.Attributes = []wire.TopicAttribute{{Key: attrMessageType, Value: typ}}
	}
	return h
}

func (s *TopicSpec) validate() error {
	if err := message.ValidateTopic(s.Name); err != nil {
		return invalidName(err)
	}
	if s.Queues < 0 {
		return invalidf("queue count %d: must be positive", s.Queues)
	}
	if s.Type != "" {
		t, err := ParseMessageType(s.Type)
		if err != nil {
			return err
		}
		s.Type = t
	}
	if s.Perm&^(wire.PermRead|wire.PermWrite) != 0 {
		return invalidf("permission %d: want read, write or both", s.Perm)
	}
	return nil
}

// CreateTopic creates a topic on every master of the cluster and waits,
// up to the client's timeout, until the name servers route it. It fails
// with ErrTopicExists when the name servers already route the topic.
func (c *Client) CreateTopic(ctx context.Context, spec TopicSpec) (*TopicChange, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Queues == 0 {
		spec.Queues = DefaultQueues
	}
	if spec.Perm == 0 {
		spec.Perm = wire.PermRead | wire.PermWrite
	}
	if _, err := c.Route(ctx, spec.Name); err == nil {
		return nil, errorf(ErrTopicExists, "topic %s already exists (change it with topic update)", spec.Name)
	} else if !errors.Is(err, ErrTopicNotFound) {
		return nil, err
	}
	masters, err := c.clusterMasters(ctx, spec.Cluster)
	if err != nil {
		return nil, err
	}
	h := createHeader(spec.Name, spec.Queues, spec.Queues, spec.Perm, spec.Type)
	for _, b := range masters {
		if _, err := c.invoke(ctx, brokerTarget(b), request(wire.UpdateAndCreateTopic, h, nil)); err != nil {
			return nil, err
		}
	}
	routed := c.waitRoute(ctx, spec.Name, func(r *wire.TopicRouteData) bool {
		_, qd := routeMasters(r)
		for _, b := range masters {
			if q, ok := qd[b.Name]; !ok || q.ReadQueueNums != spec.Queues || q.WriteQueueNums != spec.Queues {
				return false
			}
		}
		return true
	})
	return &TopicChange{Topic: spec.Name, Brokers: masters, Routed: routed}, nil
}

// UpdateTopic changes the queue count, type or permission of an existing
// topic on every master that has it; what spec leaves zero is kept.
func (c *Client) UpdateTopic(ctx context.Context, spec TopicSpec) (*TopicChange, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if spec.Queues == 0 && spec.Type == "" && spec.Perm == 0 {
		return nil, invalidf("nothing to change: give the queue count, the type or the permission")
	}
	route, err := c.Route(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	masters, qd := routeMasters(route)
	if len(masters) == 0 {
		return nil, errorf(ErrNoBroker, "topic %s: its route names no broker master", spec.Name)
	}
	want := map[string]wire.QueueData{}
	for _, b := range masters {
		q := qd[b.Name]
		read, write, perm := q.ReadQueueNums, q.WriteQueueNums, q.Perm
		if spec.Queues > 0 {
			read, write = spec.Queues, spec.Queues
		}
		if spec.Perm != 0 {
			perm = spec.Perm
		}
		want[b.Name] = wire.QueueData{ReadQueueNums: read, WriteQueueNums: write, Perm: perm}
		h := createHeader(spec.Name, read, write, perm, spec.Type)
		if _, err := c.invoke(ctx, brokerTarget(b), request(wire.UpdateAndCreateTopic, h, nil)); err != nil {
			return nil, err
		}
	}
	routed := c.waitRoute(ctx, spec.Name, func(r *wire.TopicRouteData) bool {
		_, got := routeMasters(r)
		for name, w := range want {
			g, ok := got[name]
			if !ok || g.ReadQueueNums != w.ReadQueueNums || g.WriteQueueNums != w.WriteQueueNums || g.Perm&(wire.PermRead|wire.PermWrite) != w.Perm&(wire.PermRead|wire.PermWrite) {
				return false
			}
		}
		return true
	})
	return &TopicChange{Topic: spec.Name, Brokers: masters, Routed: routed}, nil
}

// waitRoute asks the name servers for the topic's route until done
// accepts it or the client's timeout passes.
func (c *Client) waitRoute(ctx context.Context, topic string, done func(*wire.TopicRouteData) bool) bool {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	t := time.NewTicker(routePoll)
	defer t.Stop()
	for {
		if r, err := c.Route(ctx, topic); err == nil && done(r) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// TopicDeletion reports a deleted topic.
type TopicDeletion struct {
	Topic string `json:"topic"`
	// Brokers are the masters that had the topic and deleted it.
	Brokers []Broker `json:"brokers"`
	// NameServers are the name servers that dropped its route.
	NameServers []string `json:"nameServers"`
}

// DeleteTopic deletes a topic from every master (of cluster, when given)
// and from every name server. It fails with ErrTopicNotFound when no
// broker had the topic and no name server routed it.
func (c *Client) DeleteTopic(ctx context.Context, topic, cluster string) (*TopicDeletion, error) {
	if topic == "" {
		return nil, invalidf("empty topic name")
	}
	routed := true
	if _, err := c.Route(ctx, topic); errors.Is(err, ErrTopicNotFound) {
		routed = false
	} else if err != nil {
		return nil, err
	}
	masters, err := c.masters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	out := &TopicDeletion{Topic: topic, Brokers: []Broker{}, NameServers: []string{}}
	for _, b := range masters {
		_, err := c.invoke(ctx, brokerTarget(b), request(wire.DeleteTopicInBroker, &wire.DeleteTopicRequestHeader{Topic: topic}, nil))
		switch {
		case err == nil:
			out.Brokers = append(out.Brokers, b)
		case HasCode(err, wire.TopicNotExist):
		default:
			return nil, err
		}
	}
	if !routed && len(out.Brokers) == 0 {
		return nil, errorf(ErrTopicNotFound, "topic %s not found", topic)
	}
	for _, addr := range c.opts.NameServers {
		h := &wire.DeleteTopicRequestHeader{Topic: topic, ClusterName: cluster}
		if _, err := c.invoke(ctx, nameServer(addr), request(wire.DeleteTopicInNamesrv, h, nil)); err != nil {
			return nil, err
		}
		out.NameServers = append(out.NameServers, addr)
	}
	return out, nil
}

// topicConfig is Java's TopicConfig, as GET_ALL_TOPIC_CONFIG carries it.
type topicConfig struct {
	TopicName      string            `json:"topicName"`
	ReadQueueNums  int32             `json:"readQueueNums"`
	WriteQueueNums int32             `json:"writeQueueNums"`
	Perm           int32             `json:"perm"`
	Order          bool              `json:"order"`
	Attributes     map[string]string `json:"attributes"`
}

// messageType returns the topic's message type, "" when it has none.
func (t topicConfig) messageType() string {
	if v := t.Attributes[attrMessageType]; v != "" {
		return strings.ToUpper(v)
	}
	return ""
}

// topicConfigs asks a broker for all its topic configurations.
func (c *Client) topicConfigs(ctx context.Context, b Broker) (map[string]topicConfig, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetAllTopicConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		TopicConfigTable map[string]topicConfig `json:"topicConfigTable"`
	}
	if len(resp.Body) > 0 {
		if err := decodeBody(t, wire.GetAllTopicConfig, resp.Body, &w); err != nil {
			return nil, err
		}
	}
	for name, tc := range w.TopicConfigTable {
		if tc.TopicName == "" {
			tc.TopicName = name
			w.TopicConfigTable[name] = tc
		}
	}
	return w.TopicConfigTable, nil
}

// TopicSummary is one topic of ListTopics.
type TopicSummary struct {
	Topic string `json:"topic"`
	// Type is the message type, "" when the brokers set none or did not
	// say.
	Type string `json:"type"`
	// ReadQueues and WriteQueues are summed over the brokers; 0 when the
	// brokers did not say.
	ReadQueues  int32    `json:"readQueues"`
	WriteQueues int32    `json:"writeQueues"`
	Brokers     []string `json:"brokers"`
	System      bool     `json:"system"`
}

// ListTopics lists the topics the name servers know, sorted, without
// system topics (see IsSystemTopic) unless all is set. Queue counts and
// types come from the masters' topic configurations, as far as they
// answer.
func (c *Client) ListTopics(ctx context.Context, all bool) ([]TopicSummary, error) {
	resp, ns, err := c.namesrvInvoke(ctx, wire.GetAllTopicListFromNameServer, nil)
	if err != nil {
		return nil, err
	}
	var list wire.TopicListBody
	if len(resp.Body) > 0 {
		if err := decodeBody(ns, wire.GetAllTopicListFromNameServer, resp.Body, &list); err != nil {
			return nil, err
		}
	}
	brokers, err := c.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	configs := map[string][]topicConfig{}
	holders := map[string][]string{}
	for _, b := range brokers {
		names[b.Cluster], names[b.Name] = true, true
		if !b.IsMaster() {
			continue
		}
		tcs, err := c.topicConfigs(ctx, b)
		if err != nil {
			continue // details are best effort; the list comes from the name servers
		}
		for _, name := range slices.Sorted(maps.Keys(tcs)) {
			configs[name] = append(configs[name], tcs[name])
			holders[name] = append(holders[name], b.Name)
		}
	}
	seen := map[string]bool{}
	out := []TopicSummary{}
	for _, name := range list.TopicList {
		if seen[name] {
			continue
		}
		seen[name] = true
		s := TopicSummary{Topic: name, Brokers: holders[name], System: IsSystemTopic(name, names)}
		if s.System && !all {
			continue
		}
		if s.Brokers == nil {
			s.Brokers = []string{}
		}
		for _, tc := range configs[name] {
			s.ReadQueues += tc.ReadQueueNums
			s.WriteQueues += tc.WriteQueueNums
			if s.Type == "" {
				s.Type = tc.messageType()
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b TopicSummary) int { return strings.Compare(a.Topic, b.Topic) })
	return out, nil
}

// TopicDescription is a topic's route, configuration and queues.
type TopicDescription struct {
	Topic      string            `json:"topic"`
	Type       string            `json:"type"` // "" when none is set or the brokers did not say
	Attributes map[string]string `json:"attributes"`
	Brokers    []TopicBroker     `json:"brokers"`
	Queues     []QueueOffsets    `json:"queues"`
	// Messages is the sum over the queues of MaxOffset - MinOffset.
	Messages int64 `json:"messages"`
	// ConsumerGroups are the groups that consume the topic, sorted: those
	// with an online subscriber or committed offsets on any of its brokers
	// (QUERY_TOPIC_CONSUME_BY_WHO).
	ConsumerGroups []string `json:"consumerGroups"`
}

// TopicBroker is a topic's queues on one broker.
type TopicBroker struct {
	Cluster     string `json:"cluster"`
	BrokerName  string `json:"brokerName"`
	Address     string `json:"address"`
	ReadQueues  int32  `json:"readQueues"`
	WriteQueues int32  `json:"writeQueues"`
	Perm        string `json:"perm"`
}

// QueueOffsets are one queue's bounds: MinOffset is the oldest message
// still kept, MaxOffset the next offset to be written.
type QueueOffsets struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	MinOffset  int64  `json:"minOffset"`
	MaxOffset  int64  `json:"maxOffset"`
	// LastUpdateTimestamp is the store time of the newest message (ms),
	// 0 when the broker does not say.
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// topicOffset is Java's TopicOffset.
type topicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// DescribeTopic returns a topic's route and, for every queue, its min and
// max offsets.
func (c *Client) DescribeTopic(ctx context.Context, topic string) (*TopicDescription, error) {
	route, err := c.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	masters, qd := routeMasters(route)
	d := &TopicDescription{Topic: topic, Attributes: map[string]string{}, Brokers: []TopicBroker{}, Queues: []QueueOffsets{}, ConsumerGroups: []string{}}
	for _, b := range masters {
		q := qd[b.Name]
		d.Brokers = append(d.Brokers, TopicBroker{
			Cluster: b.Cluster, BrokerName: b.Name, Address: b.Addr,
			ReadQueues: q.ReadQueueNums, WriteQueues: q.WriteQueueNums, Perm: FormatPerm(q.Perm),
		})
		if tcs, err := c.topicConfigs(ctx, b); err == nil {
			if tc, ok := tcs[topic]; ok && d.Type == "" {
				d.Type = tc.messageType()
				maps.Copy(d.Attributes, tc.Attributes)
			}
		}
		qs, err := c.queueOffsets(ctx, b, topic, max(q.ReadQueueNums, q.WriteQueueNums))
		if err != nil {
			return nil, err
		}
		d.Queues = append(d.Queues, qs...)
		if gs, err := c.consumingGroups(ctx, b, topic); err == nil {
			d.ConsumerGroups = append(d.ConsumerGroups, gs...)
		}
	}
	for _, q := range d.Queues {
		d.Messages += max(q.MaxOffset-q.MinOffset, 0)
	}
	slices.Sort(d.ConsumerGroups)
	d.ConsumerGroups = slices.Compact(d.ConsumerGroups)
	return d, nil
}

// consumingGroups asks one broker which groups consume topic.
func (c *Client) consumingGroups(ctx context.Context, b Broker, topic string) ([]string, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.QueryTopicConsumeByWho, &wire.TopicRequestHeader{Topic: topic}, nil))
	if err != nil {
		return nil, err
	}
	var body wire.GroupListBody
	if err := decodeBody(t, wire.QueryTopicConsumeByWho, resp.Body, &body); err != nil {
		return nil, err
	}
	return body.GroupList, nil
}

// queueOffsets asks one broker for the bounds of a topic's queues, with
// GET_TOPIC_STATS_INFO or, when the broker lacks it, GET_MIN_OFFSET and
// GET_MAX_OFFSET for each of the n queues.
func (c *Client) queueOffsets(ctx context.Context, b Broker, topic string, n int32) ([]QueueOffsets, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetTopicStatsInfo, &wire.GetTopicStatsInfoRequestHeader{Topic: topic}, nil))
	switch {
	case err == nil:
		var stats struct {
			OffsetTable queueTable[topicOffset] `json:"offsetTable"`
		}
		if err := decodeBody(t, wire.GetTopicStatsInfo, resp.Body, &stats); err != nil {
			return nil, err
		}
		out := []QueueOffsets{}
		for _, q := range sortedQueues(stats.OffsetTable) {
			o := stats.OffsetTable[q]
			out = append(out, QueueOffsets{BrokerName: b.Name, QueueID: q.QueueID, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset, LastUpdateTimestamp: o.LastUpdateTimestamp})
		}
		return out, nil
	case !HasCode(err, wire.RequestCodeNotSupported):
		return nil, err
	}
	out := []QueueOffsets{}
	for q := range n {
		minOff, err := c.queueOffset(ctx, t, wire.GetMinOffset, &wire.GetMinOffsetRequestHeader{Topic: topic, QueueID: q, BrokerName: b.Name})
		if err != nil {
			return nil, err
		}
		maxOff, err := c.queueOffset(ctx, t, wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: topic, QueueID: q, Committed: true, BrokerName: b.Name})
		if err != nil {
			return nil, err
		}
		out = append(out, QueueOffsets{BrokerName: b.Name, QueueID: q, MinOffset: minOff, MaxOffset: maxOff})
	}
	return out, nil
}

// queueOffset sends a request answered by an offset extField.
func (c *Client) queueOffset(ctx context.Context, t target, code wire.RequestCode, h wire.Header) (int64, error) {
	resp, err := c.invoke(ctx, t, request(code, h, nil))
	if err != nil {
		return 0, err
	}
	var oh wire.OffsetResponseHeader
	if err := resp.DecodeHeader(&oh); err != nil {
		return 0, fmt.Errorf("%s answered %s without a valid offset: %w", t, code, err)
	}
	return oh.Offset, nil
}
