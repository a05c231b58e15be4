package console

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// Group is a consumer group as the API shows it.
type Group struct {
	Name            string `json:"name"`
	FIFO            bool   `json:"fifo"`
	Broadcast       bool   `json:"broadcast"`
	MaxAttempts     int32  `json:"maxAttempts"`
	ConsumeDisabled bool   `json:"consumeDisabled"`
	// Configured is false for a group known only from its consumers or
	// offsets.
	Configured bool `json:"configured"`
	Online     int  `json:"online"` // consumers connected
	// Lag is the messages stored after its committed offsets (from the
	// first kept where it has none), over its retry topic, the topics it
	// has offsets in and those its consumers subscribe.
	Lag         int64 `json:"lag"`
	DeadLetters int64 `json:"deadLetters"`
	// Filled by GET /groups/{group} only.
	Members []Member    `json:"members,omitempty"`
	Topics  []TopicLag  `json:"topics,omitempty"`
	Queues  []QueueLag  `json:"queues,omitempty"`
	Subs    []Subscribe `json:"subscriptions,omitempty"`
	// LagHistory is the group's lag sampled by the server over the last
	// minutes, oldest first (GET /groups/{group} only).
	LagHistory []LagSample `json:"lagHistory,omitempty"`
}

// Member is an online consumer of a group.
type Member struct {
	ClientID string `json:"clientId"`
	Addr     string `json:"addr"`
	Protocol string `json:"protocol"` // remoting, grpc
	// Language and Version are what the client says it is: "JAVA",
	// "GO", "NODE_JS"...; a remoting client's RocketMQ version
	// ("V4_5_2"), a gRPC client's own ("5.0.7"). Empty when unsaid.
	Language      string `json:"language"`
	Version       string `json:"version"`
	ConsumeType   string `json:"consumeType"`
	LastHeartbeat int64  `json:"lastHeartbeat"` // ms
}

// Subscribe is one subscription of a group.
type Subscribe struct {
	Topic      string `json:"topic"`
	Expression string `json:"expression"`
	Type       string `json:"type"`
}

// TopicLag is a group's lag in one topic.
type TopicLag struct {
	Topic string `json:"topic"`
	Lag   int64  `json:"lag"`
}

// QueueLag is a group's position in one queue.
type QueueLag struct {
	Topic          string `json:"topic"`
	Queue          int32  `json:"queue"`
	MaxOffset      int64  `json:"maxOffset"`
	ConsumerOffset int64  `json:"consumerOffset"` // -1 when none is committed
	Lag            int64  `json:"lag"`
}

// GroupList is the answer of GET /groups.
type GroupList struct {
	Groups []Group `json:"groups"`
}

// groupNames returns the configured groups and those with online
// consumers, by name.
func groupNames(e *engine.Engine) (map[string]*meta.Group, []string) {
	cfg := map[string]*meta.Group{}
	for _, g := range e.Groups() {
		cfg[g.Name] = &g
	}
	names := map[string]bool{}
	for n := range cfg {
		names[n] = true
	}
	for _, n := range e.Clients().ConsumerGroups() {
		names[n] = true
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return cfg, out
}

// consumedTopics are the topics whose lag is a group's, as the brokers'
// GET_CONSUME_STATS counts it: its retry topic, the topics it has
// committed offsets in and those its online consumers subscribe, sorted.
func consumedTopics(e *engine.Engine, group string) ([]string, error) {
	topics, err := e.TopicsConsumedBy(group)
	if err != nil {
		return nil, err
	}
	topics = append(topics, message.RetryTopic(group))
	if gi, ok := e.Clients().ConsumerGroup(group); ok {
		for _, s := range gi.Subscriptions {
			topics = append(topics, s.Topic)
		}
	}
	slices.Sort(topics)
	return slices.Compact(topics), nil
}

// lagOf returns a group's lag: the messages stored after its committed
// offsets (all of a queue's where it has none) over the topics of
// consumedTopics; with detail, per topic (retry topic left out) and per
// queue too.
func lagOf(e *engine.Engine, name string, detail bool) (lag int64, topics []TopicLag, queues []QueueLag, err error) {
	names, err := consumedTopics(e, name)
	if err != nil {
		return 0, nil, nil, err
	}
	for _, topic := range names {
		t, err := e.Topic(topic)
		if errors.Is(err, engine.ErrTopicNotFound) {
			continue
		}
		if err != nil {
			return 0, nil, nil, err
		}
		committed, err := e.ConsumerOffsets(name, topic)
		if err != nil && !errors.Is(err, engine.ErrNoOffset) {
			return 0, nil, nil, err
		}
		tl := TopicLag{Topic: topic}
		for q := range t.ReadQueues {
			maxOff, err := e.MaxOffset(topic, q)
			if err != nil {
				return 0, nil, nil, err
			}
			ql := QueueLag{Topic: topic, Queue: q, MaxOffset: maxOff, ConsumerOffset: -1}
			if off, ok := committed[q]; ok {
				ql.ConsumerOffset = off
				ql.Lag = max(maxOff-off, 0)
			} else {
				// As GET_CONSUME_STATS counts it (RocketMQ's consumer
				// offset 0), so the admin CLI and dashboards agree.
				ql.Lag = maxOff
			}
			tl.Lag += ql.Lag
			if detail {
				queues = append(queues, ql)
			}
		}
		lag += tl.Lag
		if detail && !message.IsRetryTopic(topic) {
			topics = append(topics, tl)
		}
	}
	return lag, topics, queues, nil
}

// groupOf builds a group's summary; with detail, its members, topics and
// queues too.
func groupOf(e *engine.Engine, name string, cfg *meta.Group, detail bool) (Group, error) {
	g := Group{Name: name, MaxAttempts: meta.DefaultMaxAttempts}
	if cfg != nil {
		g.Configured, g.FIFO, g.Broadcast, g.MaxAttempts, g.ConsumeDisabled = true, cfg.FIFO, cfg.Broadcast, cfg.Attempts(), cfg.ConsumeDisabled
	}
	consumers := e.Clients().Consumers(name)
	g.Online = len(consumers)
	var err error
	if g.Lag, g.Topics, g.Queues, err = lagOf(e, name, detail); err != nil {
		return g, err
	}
	if n, err := depth(e, message.DLQTopic(name)); err == nil {
		g.DeadLetters = n
	}
	if detail {
		g.Members = []Member{}
		for _, c := range consumers {
			m := Member{ClientID: string(c.ID), Protocol: c.Protocol, Language: c.Language, Version: c.Version, ConsumeType: c.Type.String(), LastHeartbeat: c.LastHeartbeat.UnixMilli()}
			if c.Conn != nil {
				m.Addr = c.Conn.RemoteAddr()
			}
			g.Members = append(g.Members, m)
		}
		if gi, ok := e.Clients().ConsumerGroup(name); ok {
			for _, s := range gi.Subscriptions {
				g.Subs = append(g.Subs, Subscribe{Topic: s.Topic, Expression: s.Expression, Type: string(s.ExprType)})
			}
		}
		for _, s := range []*[]TopicLag{&g.Topics} {
			if *s == nil {
				*s = []TopicLag{}
			}
		}
		if g.Queues == nil {
			g.Queues = []QueueLag{}
		}
		if g.Subs == nil {
			g.Subs = []Subscribe{}
		}
	}
	return g, nil
}

// depth is the messages a topic holds; 0 when it does not exist.
func depth(e *engine.Engine, topic string) (int64, error) {
	t, err := e.Topic(topic)
	if errors.Is(err, engine.ErrTopicNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for q := range t.Queues() {
		lo, err := e.MinOffset(topic, q)
		if err != nil {
			return 0, err
		}
		hi, err := e.MaxOffset(topic, q)
		if err != nil {
			return 0, err
		}
		n += hi - lo
	}
	return n, nil
}

// listGroups answers GET /groups: every group (system groups with
// system=true), with lag and members online.
func (a *API) listGroups(r *request) (any, error) {
	all, err := boolParam(r, "system")
	if err != nil {
		return nil, err
	}
	cfg, names := groupNames(r.eng)
	out := GroupList{Groups: []Group{}}
	for _, n := range names {
		if !all && isSystemGroup(n) || !r.may(hook.Group(n)) {
			continue
		}
		g, err := groupOf(r.eng, n, cfg[n], false)
		if err != nil {
			return nil, err
		}
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}

func isSystemGroup(g string) bool {
	return g == message.GroupTools || strings.HasPrefix(g, "CID_RMQ_SYS_")
}

// getGroup answers GET /groups/{group}.
func (a *API) getGroup(r *request) (any, error) {
	name := r.PathValue("group")
	cfg, names := groupNames(r.eng)
	if !slices.Contains(names, name) {
		if _, err := r.eng.TopicsConsumedBy(name); err != nil {
			return nil, err
		}
		return nil, &Error{Status: 404, Code: "GROUP_NOT_FOUND", Message: "consumer group " + name + " not found"}
	}
	g, err := groupOf(r.eng, name, cfg[name], true)
	if err == nil && a.o.LagHistory != nil {
		g.LagHistory = a.o.LagHistory.Of(name)
	}
	return g, err
}

// ResetRequest is the body of POST /groups/{group}/reset-offset.
type ResetRequest struct {
	Topic string `json:"topic"`
	// Time is where to go: milliseconds since the epoch (a number) or an
	// RFC 3339 time (a string).
	Time any `json:"time"`
}

// ResetResult is its answer.
type ResetResult struct {
	Group     string          `json:"group"`
	Topic     string          `json:"topic"`
	Timestamp int64           `json:"timestamp"`
	Offsets   map[int32]int64 `json:"offsets"`
}

// resetOffset answers POST /groups/{group}/reset-offset.
func (a *API) resetOffset(r *request) (any, error) {
	var req ResetRequest
	if err := r.decode(&req); err != nil {
		return nil, err
	}
	if req.Topic == "" {
		return nil, badRequest("topic is required")
	}
	var ts int64
	switch v := req.Time.(type) {
	case float64:
		if v < 0 || v != float64(int64(v)) {
			return nil, badRequest("time %v: want whole milliseconds since the epoch, 0 or more", v)
		}
		ts = int64(v)
	case string:
		t, err := parseTime("time", v)
		if err != nil {
			return nil, err
		}
		ts = t
	case nil:
		return nil, badRequest("time is required: milliseconds since the epoch or an RFC 3339 time")
	default:
		return nil, badRequest("time: want milliseconds since the epoch or an RFC 3339 time")
	}
	name := r.PathValue("group")
	if _, err := r.eng.Topic(req.Topic); err != nil {
		return nil, err
	}
	if ts > time.Now().Add(time.Hour).UnixMilli() {
		return nil, badRequest("time %d is more than an hour ahead", ts)
	}
	offs, err := r.eng.ResetOffset(r.Context(), name, req.Topic, ts)
	if err != nil {
		return nil, err
	}
	return ResetResult{Group: name, Topic: req.Topic, Timestamp: ts, Offsets: offs}, nil
}

// DeadLetters is the answer of GET /groups/{group}/dead-letters.
type DeadLetters struct {
	Group    string    `json:"group"`
	Count    int64     `json:"count"`
	Messages []Message `json:"messages"`
}

// deadLetters answers GET /groups/{group}/dead-letters?count=: how many
// the group has and the oldest count of them (default 32, 0 for none).
func (a *API) deadLetters(r *request) (any, error) {
	name := r.PathValue("group")
	if err := message.ValidateGroup(name); err != nil {
		return nil, badRequest("group %q: %s", name, strings.TrimPrefix(err.Error(), "message: "))
	}
	count, err := r.intParam("count", 32, 0, maxCount)
	if err != nil {
		return nil, err
	}
	out := DeadLetters{Group: name, Messages: []Message{}}
	dlq := message.DLQTopic(name)
	if out.Count, err = depth(r.eng, dlq); err != nil || count == 0 || out.Count == 0 {
		return out, err
	}
	t, err := r.eng.Topic(dlq)
	if err != nil {
		return nil, err
	}
	for q := range t.Queues() {
		p, err := readQueue(r, dlq, q, 0, int(count)-len(out.Messages), 1<<62)
		if err != nil {
			return nil, err
		}
		out.Messages = append(out.Messages, p.Messages...)
		if len(out.Messages) >= int(count) {
			break
		}
	}
	return out, nil
}

// Resent is the answer of a dead-letter resend.
type Resent struct {
	Group       string `json:"group"`
	DeadLetter  string `json:"deadLetter"`
	Topic       string `json:"topic"`
	ID          string `json:"id"`
	OffsetID    string `json:"offsetId"`
	Queue       int32  `json:"queue"`
	QueueOffset int64  `json:"queueOffset"`
}

// resend answers POST /groups/{group}/dead-letters/{id}/resend.
func (a *API) resend(r *request) (any, error) {
	name, id := r.PathValue("group"), r.PathValue("id")
	res, err := r.eng.ResendDeadLetter(r.Context(), name, id)
	if err != nil {
		return nil, err
	}
	return Resent{Group: name, DeadLetter: id, Topic: res.Topic, ID: res.MsgID, OffsetID: res.OffsetMsgID(),
		Queue: res.QueueID, QueueOffset: res.QueueOffset}, nil
}
