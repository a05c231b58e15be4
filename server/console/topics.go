package console

import (
	"slices"
	"strconv"
	"strings"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

// Topic is a topic as the API shows it.
type Topic struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // NORMAL, FIFO, DELAY, TRANSACTION, MIXED; "" unspecified
	Perm        string `json:"perm"` // "rw", "r", "w" or "-"
	ReadQueues  int32  `json:"readQueues"`
	WriteQueues int32  `json:"writeQueues"`
	System      bool   `json:"system"`
	// Counters since the server started; Depth is what the queues hold.
	MessagesIn  int64 `json:"messagesIn"`
	BytesIn     int64 `json:"bytesIn"`
	MessagesOut int64 `json:"messagesOut"`
	BytesOut    int64 `json:"bytesOut"`
	Depth       int64 `json:"depth"`
	// Queues are filled by GET /topics/{topic} only.
	Queues []Queue `json:"queues,omitempty"`
	// Groups are the consumer groups with committed offsets in the topic
	// (GET /topics/{topic} only).
	Groups []string `json:"groups,omitempty"`
}

// Queue is one queue's bounds.
type Queue struct {
	ID        int32 `json:"id"`
	MinOffset int64 `json:"minOffset"`
	MaxOffset int64 `json:"maxOffset"`
	// LastStored is the store time of its last message (ms), 0 when empty.
	LastStored int64 `json:"lastStored"`
}

// TopicSpec is the body of topic create and update.
type TopicSpec struct {
	Name string `json:"name"` // create only
	// Queues sets the read and write queue counts alike (1 to 1024);
	// ReadQueues and WriteQueues set one each.
	Queues      int32  `json:"queues"`
	ReadQueues  int32  `json:"readQueues"`
	WriteQueues int32  `json:"writeQueues"`
	Type        string `json:"type"`
	Perm        string `json:"perm"`
}

const maxQueues = 1024

func formatPerm(p meta.Perm) string {
	switch {
	case p.Readable() && p.Writable():
		return "rw"
	case p.Readable():
		return "r"
	case p.Writable():
		return "w"
	}
	return "-"
}

func parsePerm(s string) (meta.Perm, error) {
	switch strings.ToLower(s) {
	case "rw", "wr":
		return meta.PermRW, nil
	case "r":
		return meta.PermRead, nil
	case "w":
		return meta.PermWrite, nil
	case "-", "none":
		return 0, nil
	}
	return 0, badRequest("perm %q: want rw, r, w or -", s)
}

func typeName(t meta.MessageType) string {
	if t == meta.MessageTypeUnspecified {
		return ""
	}
	return t.String()
}

func topicOf(t meta.Topic, st engine.TopicStats) Topic {
	return Topic{
		Name: t.Name, Type: typeName(t.MessageType), Perm: formatPerm(t.Perm),
		ReadQueues: t.ReadQueues, WriteQueues: t.WriteQueues,
		System:     t.System || message.IsSystemTopic(t.Name) || message.IsRetryTopic(t.Name) || message.IsDLQTopic(t.Name),
		MessagesIn: st.MessagesIn, BytesIn: st.BytesIn, MessagesOut: st.MessagesOut, BytesOut: st.BytesOut, Depth: st.Depth,
	}
}

// TopicList is the answer of GET /topics.
type TopicList struct {
	Topics []Topic `json:"topics"`
}

// listTopics answers GET /topics: user topics by name, and with
// system=true retry, dead-letter and system topics too.
func (a *API) listTopics(r *request) (any, error) {
	all, err := boolParam(r, "system")
	if err != nil {
		return nil, err
	}
	stats := map[string]engine.TopicStats{}
	for _, ts := range r.eng.Stats().Topics {
		stats[ts.Topic] = ts
	}
	out := TopicList{Topics: []Topic{}}
	for _, t := range r.eng.Topics() {
		tp := topicOf(t, stats[t.Name])
		if tp.System && !all || !r.may(hook.Topic(t.Name)) {
			continue
		}
		out.Topics = append(out.Topics, tp)
	}
	slices.SortFunc(out.Topics, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func boolParam(r *request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest("parameter %s=%q: want true or false", name, s)
	}
	return b, nil
}

// getTopic answers GET /topics/{topic}: the topic with its queues and
// the groups that consume it.
func (a *API) getTopic(r *request) (any, error) {
	name := r.PathValue("topic")
	t, err := r.eng.Topic(name)
	if err != nil {
		return nil, err
	}
	var st engine.TopicStats
	for _, ts := range r.eng.Stats().Topics {
		if ts.Topic == name {
			st = ts
		}
	}
	out := topicOf(t, st)
	out.Queues = make([]Queue, 0, t.Queues())
	for q := range t.Queues() {
		qi := Queue{ID: q}
		if qi.MinOffset, err = r.eng.MinOffset(name, q); err != nil {
			return nil, err
		}
		if qi.MaxOffset, err = r.eng.MaxOffset(name, q); err != nil {
			return nil, err
		}
		if qi.MaxOffset > qi.MinOffset {
			qi.LastStored, _ = r.eng.StoreTime(name, q, qi.MaxOffset-1)
		}
		out.Queues = append(out.Queues, qi)
	}
	groups, err := r.eng.GroupsConsuming(name)
	if err != nil {
		return nil, err
	}
	out.Groups = []string{}
	for _, g := range groups {
		if r.may(hook.Group(g)) {
			out.Groups = append(out.Groups, g)
		}
	}
	return out, nil
}

// apply sets t from s: queue counts, type and permission, those given.
func (s TopicSpec) apply(t *meta.Topic) error {
	if s.Queues != 0 && (s.ReadQueues != 0 || s.WriteQueues != 0) {
		return badRequest("give queues, or readQueues and writeQueues, not both")
	}
	if s.Queues != 0 {
		s.ReadQueues, s.WriteQueues = s.Queues, s.Queues
	}
	for _, q := range []struct {
		name string
		n    int32
	}{{"readQueues", s.ReadQueues}, {"writeQueues", s.WriteQueues}} {
		if q.n < 0 || q.n > maxQueues {
			return badRequest("%s %d: want 1 to %d", q.name, q.n, maxQueues)
		}
	}
	if s.ReadQueues != 0 {
		t.ReadQueues = s.ReadQueues
	}
	if s.WriteQueues != 0 {
		t.WriteQueues = s.WriteQueues
	}
	if s.Type != "" {
		mt, err := meta.ParseMessageType(s.Type)
		if err != nil {
			return badRequest("type %q: want NORMAL, FIFO, DELAY, TRANSACTION or MIXED", s.Type)
		}
		t.MessageType = mt
	}
	if s.Perm != "" {
		p, err := parsePerm(s.Perm)
		if err != nil {
			return err
		}
		t.Perm = p
	}
	return nil
}

// createTopic answers POST /topics: 201 with the topic.
func (a *API) createTopic(r *request) (any, error) {
	var s TopicSpec
	if err := r.decode(&s); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, badRequest("name is required")
	}
	if err := message.ValidateUserTopic(s.Name); err != nil {
		return nil, badRequest("name %q: %s", s.Name, strings.TrimPrefix(err.Error(), "message: "))
	}
	t := meta.Topic{Name: s.Name, ReadQueues: 8, WriteQueues: 8, Perm: meta.PermRW}
	if err := s.apply(&t); err != nil {
		return nil, err
	}
	if _, isNew, err := r.eng.EnsureTopic(t); err != nil {
		return nil, err
	} else if !isNew {
		return nil, &Error{Status: 409, Code: "TOPIC_EXISTS", Message: "topic " + t.Name + " already exists; change it with PUT"}
	}
	got, err := a.getTopic(r.withPath("topic", s.Name))
	return created{got}, err
}

// withPath returns r with a path value set, for handlers that answer
// with another's result.
func (r *request) withPath(name, value string) *request {
	c := *r
	c.Request = r.Request.Clone(r.Context())
	c.Request.SetPathValue(name, value)
	return &c
}

// updateTopic answers PUT /topics/{topic}: changes the fields given.
func (a *API) updateTopic(r *request) (any, error) {
	var s TopicSpec
	if err := r.decode(&s); err != nil {
		return nil, err
	}
	name := r.PathValue("topic")
	if s.Name != "" && s.Name != name {
		return nil, badRequest("a topic cannot be renamed (name %q in the body, %q in the path)", s.Name, name)
	}
	t, err := r.eng.Topic(name)
	if err != nil {
		return nil, err
	}
	if err := s.apply(&t); err != nil {
		return nil, err
	}
	if err := r.eng.UpdateTopic(t); err != nil {
		return nil, err
	}
	return a.getTopic(r)
}

// Deleted is the answer of a deletion.
type Deleted struct {
	Deleted string `json:"deleted"`
}

// deleteTopic answers DELETE /topics/{topic}.
func (a *API) deleteTopic(r *request) (any, error) {
	name := r.PathValue("topic")
	if _, err := r.eng.Topic(name); err != nil {
		return nil, err
	}
	if err := r.eng.DeleteTopic(name); err != nil {
		return nil, err
	}
	return Deleted{Deleted: name}, nil
}
