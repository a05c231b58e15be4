package admin

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// DefaultMaxAttempts is how many times a group's consumers get a message
// before it goes to the dead-letter topic, when group create is not told:
// the first delivery and RocketMQ's default of 16 retries.
const DefaultMaxAttempts = 17

// GroupSettings are the settings of a consumer group that group create
// and group update set. Nil fields take the defaults on create and stay
// as they are on update.
type GroupSettings struct {
	// FIFO makes the group consume each queue (or message group) in
	// order: Java's consumeMessageOrderly.
	FIFO *bool
	// Broadcast makes every consumer of the group get every message:
	// Java's consumeBroadcastEnable.
	Broadcast *bool
	// MaxAttempts is the number of deliveries of a message, the first
	// included, before it goes to the group's dead-letter topic. On the
	// wire it is Java's retryMaxTimes = MaxAttempts - 1. At least 1;
	// default DefaultMaxAttempts.
	MaxAttempts *int32
	// ConsumeEnabled lets the group consume: Java's consumeEnable.
	// Default true.
	ConsumeEnabled *bool
}

func (s GroupSettings) validate() error {
	if s.MaxAttempts != nil && *s.MaxAttempts < 1 {
		return invalidf("max attempts %d: must be at least 1", *s.MaxAttempts)
	}
	return nil
}

// isEmpty reports whether s changes nothing.
func (s GroupSettings) isEmpty() bool {
	return s.FIFO == nil && s.Broadcast == nil && s.MaxAttempts == nil && s.ConsumeEnabled == nil
}

// newGroupConfig returns the body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// for a new group: Java's SubscriptionGroupConfig with its defaults.
func newGroupConfig(name string) map[string]any {
	return map[string]any{
		"groupName":                      name,
		"consumeEnable":                  true,
		"consumeFromMinEnable":           true,
		"consumeBroadcastEnable":         false,
		"consumeMessageOrderly":          false,
		"retryQueueNums":                 1,
		"retryMaxTimes":                  DefaultMaxAttempts - 1,
		"brokerId":                       0,
		"whichBrokerWhenConsumeSlowly":   1,
		"notifyConsumerIdsChangedEnable": true,
		"groupSysFlag":                   0,
		"consumeTimeoutMinute":           15,
	}
}

// apply writes the settings into a SubscriptionGroupConfig JSON object.
func (s GroupSettings) apply(cfg map[string]any) {
	if s.FIFO != nil {
		cfg["consumeMessageOrderly"] = *s.FIFO
	}
	if s.Broadcast != nil {
		cfg["consumeBroadcastEnable"] = *s.Broadcast
	}
	if s.MaxAttempts != nil {
		cfg["retryMaxTimes"] = *s.MaxAttempts - 1
	}
	if s.ConsumeEnabled != nil {
		cfg["consumeEnable"] = *s.ConsumeEnabled
	}
}

// subscriptionGroupConfig is the part of Java's SubscriptionGroupConfig
// this package reads.
type subscriptionGroupConfig struct {
	GroupName              string `json:"groupName"`
	ConsumeEnable          bool   `json:"consumeEnable"`
	ConsumeBroadcastEnable bool   `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly  bool   `json:"consumeMessageOrderly"`
	RetryMaxTimes          int32  `json:"retryMaxTimes"`
}

// GroupInfo is a consumer group's configuration.
type GroupInfo struct {
	Group     string `json:"group"`
	FIFO      bool   `json:"fifo"`
	Broadcast bool   `json:"broadcast"`
	// MaxAttempts is RetryMaxTimes + 1: deliveries before the dead-letter
	// topic.
	MaxAttempts    int32    `json:"maxAttempts"`
	RetryMaxTimes  int32    `json:"retryMaxTimes"`
	ConsumeEnabled bool     `json:"consumeEnabled"`
	Brokers        []string `json:"brokers"` // the masters that have the group
	System         bool     `json:"system"`
}

// systemGroups are the groups Java brokers and tools keep for themselves.
var systemGroups = []string{
	message.GroupTools, "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CLIENT_INNER_PRODUCER",
	"SELF_TEST_P_GROUP", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PERMISSION",
	"CID_ONSAPI_OWNER", "CID_ONSAPI_PULL", "CID_SYS_RMQ_TRANS", "DEFAULT_CONSUMER", "DEFAULT_PRODUCER",
}

// IsSystemGroup reports whether a group is one RocketMQ keeps for itself.
func IsSystemGroup(group string) bool {
	return slices.Contains(systemGroups, group) || strings.HasPrefix(group, "CID_RMQ_SYS_")
}

// groupConfigs asks a broker for all its consumer groups, as raw JSON
// objects (so that an update keeps the fields this package does not know).
func (c *Client) groupConfigs(ctx context.Context, b Broker) (map[string]json.RawMessage, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	if len(resp.Body) > 0 {
		if err := decodeBody(t, wire.GetAllSubscriptionGroupConfig, resp.Body, &w); err != nil {
			return nil, err
		}
	}
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]json.RawMessage{}
	}
	return w.SubscriptionGroupTable, nil
}

// groupInfoOf reads one raw SubscriptionGroupConfig.
func groupInfoOf(name string, raw json.RawMessage) (GroupInfo, error) {
	cfg := subscriptionGroupConfig{ConsumeEnable: true, RetryMaxTimes: DefaultMaxAttempts - 1}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return GroupInfo{}, err
	}
	return GroupInfo{
		Group:          name,
		FIFO:           cfg.ConsumeMessageOrderly,
		Broadcast:      cfg.ConsumeBroadcastEnable,
		MaxAttempts:    max(cfg.RetryMaxTimes, 0) + 1,
		RetryMaxTimes:  cfg.RetryMaxTimes,
		ConsumeEnabled: cfg.ConsumeEnable,
		Brokers:        []string{},
		System:         IsSystemGroup(name),
	}, nil
}

// sendGroupConfig sends a group's configuration to a broker.
func (c *Client) sendGroupConfig(ctx context.Context, b Broker, cfg any) error {
	body, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	_, err = c.invoke(ctx, brokerTarget(b), request(wire.UpdateAndCreateSubscriptionGroup, nil, body))
	return err
}

// GroupChange reports a created or updated consumer group.
type GroupChange struct {
	Group   GroupInfo `json:"group"`
	Brokers []Broker  `json:"brokers"` // the masters that applied the change
}

// CreateGroup creates a consumer group on every master of the cluster
// (the only cluster when cluster is empty). It fails with ErrGroupExists
// when one of them has the group already.
func (c *Client) CreateGroup(ctx context.Context, name, cluster string, s GroupSettings) (*GroupChange, error) {
	if err := message.ValidateGroup(name); err != nil {
		return nil, invalidName(err)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	masters, err := c.clusterMasters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	for _, b := range masters {
		existing, err := c.groupConfigs(ctx, b)
		if err != nil {
			return nil, err
		}
		if _, ok := existing[name]; ok {
			return nil, errorf(ErrGroupExists, "consumer group %s already exists on broker %s (change it with group update)", name, b.Name)
		}
	}
	cfg := newGroupConfig(name)
	s.apply(cfg)
	for _, b := range masters {
		if err := c.sendGroupConfig(ctx, b, cfg); err != nil {
			return nil, err
		}
	}
	raw, _ := json.Marshal(cfg)
	info, _ := groupInfoOf(name, raw)
	for _, b := range masters {
		info.Brokers = append(info.Brokers, b.Name)
	}
	return &GroupChange{Group: info, Brokers: masters}, nil
}

// UpdateGroup changes the settings of an existing consumer group on every
// master that has it, keeping the rest of its configuration.
func (c *Client) UpdateGroup(ctx context.Context, name string, s GroupSettings) (*GroupChange, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.isEmpty() {
		return nil, invalidf("nothing to change: give --fifo, --broadcast, --max-attempts or --consume")
	}
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	out := &GroupChange{Brokers: []Broker{}}
	for _, b := range masters {
		existing, err := c.groupConfigs(ctx, b)
		if err != nil {
			return nil, err
		}
		raw, ok := existing[name]
		if !ok {
			continue
		}
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil || cfg == nil {
			if err == nil {
				err = errors.New("group config is not an object")
			}
			return nil, badBody(brokerTarget(b), wire.GetAllSubscriptionGroupConfig, err)
		}
		cfg["groupName"] = name
		s.apply(cfg)
		if err := c.sendGroupConfig(ctx, b, cfg); err != nil {
			return nil, err
		}
		patched, _ := json.Marshal(cfg)
		info, err := groupInfoOf(name, patched)
		if err != nil {
			return nil, err
		}
		if len(out.Brokers) == 0 {
			out.Group = info
		}
		out.Group.Brokers = append(out.Group.Brokers, b.Name)
		out.Brokers = append(out.Brokers, b)
	}
	if len(out.Brokers) == 0 {
		return nil, errorf(ErrGroupNotFound, "consumer group %s not found on any broker", name)
	}
	return out, nil
}

// GroupDeletion reports a deleted consumer group.
type GroupDeletion struct {
	Group   string   `json:"group"`
	Brokers []Broker `json:"brokers"` // the masters that had the group
}

// DeleteGroup deletes a consumer group, and with cleanOffsets its
// committed offsets, from every master that has it.
func (c *Client) DeleteGroup(ctx context.Context, name string, cleanOffsets bool) (*GroupDeletion, error) {
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	out := &GroupDeletion{Group: name, Brokers: []Broker{}}
	for _, b := range masters {
		existing, err := c.groupConfigs(ctx, b)
		if err != nil {
			return nil, err
		}
		if _, ok := existing[name]; !ok {
			continue
		}
		h := &wire.DeleteSubscriptionGroupRequestHeader{GroupName: name, CleanOffset: cleanOffsets}
		if _, err := c.invoke(ctx, brokerTarget(b), request(wire.DeleteSubscriptionGroup, h, nil)); err != nil {
			return nil, err
		}
		out.Brokers = append(out.Brokers, b)
	}
	if len(out.Brokers) == 0 {
		return nil, errorf(ErrGroupNotFound, "consumer group %s not found on any broker", name)
	}
	return out, nil
}

// ListGroups lists the consumer groups of every master, merged by name
// and sorted, without RocketMQ's own groups unless all is set.
func (c *Client) ListGroups(ctx context.Context, all bool) ([]GroupInfo, error) {
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	byName := map[string]*GroupInfo{}
	for _, b := range masters {
		cfgs, err := c.groupConfigs(ctx, b)
		if err != nil {
			return nil, err
		}
		for name, raw := range cfgs {
			gi, ok := byName[name]
			if !ok {
				info, err := groupInfoOf(name, raw)
				if err != nil {
					return nil, badBody(brokerTarget(b), wire.GetAllSubscriptionGroupConfig, err)
				}
				gi = &info
				byName[name] = gi
			}
			gi.Brokers = append(gi.Brokers, b.Name)
		}
	}
	out := []GroupInfo{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if g := byName[name]; all || !g.System {
			out = append(out, *g)
		}
	}
	return out, nil
}

// GroupDescription is a consumer group's configuration, live members and
// position in every queue it consumes.
type GroupDescription struct {
	Group string `json:"group"`
	// Config is nil when no broker has the group's configuration (it may
	// still have members, on brokers that create groups on demand).
	Config *GroupInfo `json:"config"`
	Online bool       `json:"online"`
	// ConsumeType, MessageModel and ConsumeFromWhere come from the
	// members' heartbeats; empty when none is online.
	ConsumeType      string         `json:"consumeType"`
	MessageModel     string         `json:"messageModel"`
	ConsumeFromWhere string         `json:"consumeFromWhere"`
	Members          []Member       `json:"members"`
	Subscriptions    []Subscription `json:"subscriptions"`
	Queues           []QueueLag     `json:"queues"`
	// TotalLag is the sum of Queues[].Lag.
	TotalLag int64 `json:"totalLag"`
}

// Member is one live consumer of a group.
type Member struct {
	ClientID   string   `json:"clientId"`
	ClientAddr string   `json:"clientAddr"` // "" when the broker did not say
	Language   string   `json:"language"`
	Version    int32    `json:"version"`
	Brokers    []string `json:"brokers"` // the brokers it is connected to
}

// Subscription is one topic a group's consumers subscribe.
type Subscription struct {
	Topic          string `json:"topic"`
	ExpressionType string `json:"expressionType"`
	Expression     string `json:"expression"`
}

// QueueLag is a group's position in one queue.
type QueueLag struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	// BrokerOffset is the queue's max offset, ConsumerOffset the group's
	// committed offset (the next message it will consume).
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	Lag            int64 `json:"lag"`
	// LastTimestamp is the store time of the last consumed message (ms);
	// 0 when the broker does not say.
	LastTimestamp int64 `json:"lastTimestamp"`
}

// consumerConnection is Java's ConsumerConnection.
type consumerConnection struct {
	ConnectionSet []struct {
		ClientID   string          `json:"clientId"`
		ClientAddr string          `json:"clientAddr"`
		Language   json.RawMessage `json:"language"`
		Version    int32           `json:"version"`
	} `json:"connectionSet"`
	SubscriptionTable map[string]struct {
		Topic          string `json:"topic"`
		SubString      string `json:"subString"`
		ExpressionType string `json:"expressionType"`
	} `json:"subscriptionTable"`
	ConsumeType      string `json:"consumeType"`
	MessageModel     string `json:"messageModel"`
	ConsumeFromWhere string `json:"consumeFromWhere"`
}

// offsetWrapper is Java's OffsetWrapper.
type offsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// DescribeGroup describes a consumer group. With topic, the lag covers
// that topic; without, every topic the brokers know the group consumes.
func (c *Client) DescribeGroup(ctx context.Context, name, topic string) (*GroupDescription, error) {
	masters, err := c.masters(ctx, "")
	if err != nil {
		return nil, err
	}
	d := &GroupDescription{Group: name, Members: []Member{}, Subscriptions: []Subscription{}, Queues: []QueueLag{}}
	for _, b := range masters {
		cfgs, err := c.groupConfigs(ctx, b)
		if err != nil {
			return nil, err
		}
		raw, ok := cfgs[name]
		if !ok {
			continue
		}
		if d.Config == nil {
			info, err := groupInfoOf(name, raw)
			if err != nil {
				return nil, badBody(brokerTarget(b), wire.GetAllSubscriptionGroupConfig, err)
			}
			d.Config = &info
		}
		d.Config.Brokers = append(d.Config.Brokers, b.Name)
	}

	members := map[string]*Member{}
	subs := map[string]Subscription{}
	for _, b := range masters {
		if err := c.groupMembers(ctx, b, name, d, members, subs); err != nil {
			return nil, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(members)) {
		d.Members = append(d.Members, *members[id])
	}
	d.Online = len(d.Members) > 0
	for _, t := range slices.Sorted(maps.Keys(subs)) {
		d.Subscriptions = append(d.Subscriptions, subs[t])
	}
	if d.Config == nil && !d.Online {
		return nil, errorf(ErrGroupNotFound, "consumer group %s not found: no broker has it and no consumer of it is online", name)
	}

	topics := []string{}
	if topic != "" {
		topics = append(topics, topic)
	} else {
		for _, s := range d.Subscriptions {
			topics = append(topics, s.Topic)
		}
		if !slices.Contains(topics, message.RetryTopic(name)) {
			topics = append(topics, message.RetryTopic(name))
		}
	}
	for _, b := range masters {
		lags, err := c.groupLag(ctx, b, name, topic, topics)
		if err != nil {
			return nil, err
		}
		d.Queues = append(d.Queues, lags...)
	}
	slices.SortFunc(d.Queues, func(a, b QueueLag) int {
		return compareQueues(wire.MessageQueue{Topic: a.Topic, BrokerName: a.BrokerName, QueueID: a.QueueID},
			wire.MessageQueue{Topic: b.Topic, BrokerName: b.BrokerName, QueueID: b.QueueID})
	})
	for _, q := range d.Queues {
		d.TotalLag += q.Lag
	}
	return d, nil
}

// groupMembers adds the group's clients connected to broker b, with
// GET_CONSUMER_CONNECTION_LIST or, when the broker lacks it,
// GET_CONSUMER_LIST_BY_GROUP (ids only).
func (c *Client) groupMembers(ctx context.Context, b Broker, group string, d *GroupDescription, members map[string]*Member, subs map[string]Subscription) error {
	t := brokerTarget(b)
	add := func(m Member) {
		if old, ok := members[m.ClientID]; ok {
			old.Brokers = append(old.Brokers, b.Name)
			if old.ClientAddr == "" {
				old.ClientAddr = m.ClientAddr
			}
			return
		}
		m.Brokers = []string{b.Name}
		members[m.ClientID] = &m
	}
	resp, err := c.invoke(ctx, t, request(wire.GetConsumerConnectionList, &wire.GetConsumerConnectionListRequestHeader{ConsumerGroup: group}, nil))
	switch {
	case err == nil:
		var cc consumerConnection
		if err := decodeBody(t, wire.GetConsumerConnectionList, resp.Body, &cc); err != nil {
			return err
		}
		for _, conn := range cc.ConnectionSet {
			add(Member{ClientID: conn.ClientID, ClientAddr: conn.ClientAddr, Language: languageName(conn.Language), Version: conn.Version})
		}
		for topic, s := range cc.SubscriptionTable {
			if s.Topic == "" {
				s.Topic = topic
			}
			subs[s.Topic] = Subscription{Topic: s.Topic, ExpressionType: s.ExpressionType, Expression: s.SubString}
		}
		if d.ConsumeType == "" {
			d.ConsumeType, d.MessageModel, d.ConsumeFromWhere = cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere
		}
		return nil
	case HasCode(err, wire.ConsumerNotOnline, wire.SubscriptionGroupNotExist):
		return nil
	case !HasCode(err, wire.RequestCodeNotSupported):
		return err
	}
	resp, err = c.invoke(ctx, t, request(wire.GetConsumerListByGroup, &wire.GetConsumerListByGroupRequestHeader{ConsumerGroup: group}, nil))
	if HasCode(err, wire.ConsumerNotOnline, wire.SubscriptionGroupNotExist, wire.SystemError) {
		return nil // Java answers SYSTEM_ERROR "no consumer for this group"
	}
	if err != nil {
		return err
	}
	var list wire.ConsumerListResponseBody
	if len(resp.Body) > 0 {
		if err := decodeBody(t, wire.GetConsumerListByGroup, resp.Body, &list); err != nil {
			return err
		}
	}
	for _, id := range list.ConsumerIDList {
		add(Member{ClientID: id})
	}
	return nil
}

// membersOn returns the group's clients connected to broker b, by client
// id.
func (c *Client) membersOn(ctx context.Context, b Broker, group string) (map[string]*Member, error) {
	members := map[string]*Member{}
	err := c.groupMembers(ctx, b, group, &GroupDescription{}, members, map[string]Subscription{})
	return members, err
}

// languageName reads a language given as a name or as Java's ordinal.
func languageName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n int
	if json.Unmarshal(raw, &n) == nil && n >= 0 && n < 256 {
		return wire.LanguageCode(n).String()
	}
	return ""
}

// groupLag returns the group's position in the queues of broker b, with
// GET_CONSUME_STATS or, when the broker lacks it, QUERY_CONSUMER_OFFSET
// and GET_MAX_OFFSET for each queue of topics.
func (c *Client) groupLag(ctx context.Context, b Broker, group, topic string, topics []string) ([]QueueLag, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.GetConsumeStats, &wire.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}, nil))
	switch {
	case err == nil:
		var stats struct {
			OffsetTable queueTable[offsetWrapper] `json:"offsetTable"`
		}
		if err := decodeBody(t, wire.GetConsumeStats, resp.Body, &stats); err != nil {
			return nil, err
		}
		out := []QueueLag{}
		for _, q := range sortedQueues(stats.OffsetTable) {
			o := stats.OffsetTable[q]
			brokerName := q.BrokerName
			if brokerName == "" {
				brokerName = b.Name
			}
			out = append(out, newQueueLag(q.Topic, brokerName, q.QueueID, o.BrokerOffset, o.ConsumerOffset, o.LastTimestamp))
		}
		return out, nil
	case HasCode(err, wire.TopicNotExist, wire.SubscriptionGroupNotExist, wire.ConsumerNotOnline, wire.QueryNotFound):
		return nil, nil
	case !HasCode(err, wire.RequestCodeNotSupported):
		return nil, err
	}
	var out []QueueLag
	for _, topic := range topics {
		route, err := c.Route(ctx, topic)
		if errors.Is(err, ErrTopicNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		_, qd := routeMasters(route)
		q, ok := qd[b.Name]
		if !ok {
			continue
		}
		for id := range q.ReadQueueNums {
			maxOff, err := c.queueOffset(ctx, t, wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: topic, QueueID: id, Committed: true, BrokerName: b.Name})
			if err != nil {
				return nil, err
			}
			committed, err := c.queueOffset(ctx, t, wire.QueryConsumerOffset, &wire.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: id, BrokerName: b.Name})
			if HasCode(err, wire.QueryNotFound) {
				committed, err = 0, nil
			}
			if err != nil {
				return nil, err
			}
			out = append(out, newQueueLag(topic, b.Name, id, maxOff, committed, 0))
		}
	}
	return out, nil
}

func newQueueLag(topic, broker string, queue int32, brokerOffset, consumerOffset, last int64) QueueLag {
	consumerOffset = max(consumerOffset, 0)
	return QueueLag{
		Topic: topic, BrokerName: broker, QueueID: queue,
		BrokerOffset: brokerOffset, ConsumerOffset: consumerOffset,
		Lag: max(brokerOffset-consumerOffset, 0), LastTimestamp: last,
	}
}
