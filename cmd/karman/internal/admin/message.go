package admin

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Body encodings of Message.BodyEncoding.
const (
	BodyUTF8   = "utf-8"
	BodyBase64 = "base64"
)

// DefaultQueryMax is how many messages QueryMessages returns when not told.
const DefaultQueryMax = 32

// maxTimestamp is the end of time in a QUERY_MESSAGE.
const maxTimestamp = math.MaxInt64

// maxInflatedBody bounds the size of a decompressed body.
const maxInflatedBody = 64 << 20

// Message is one stored message, as the admin commands show it.
type Message struct {
	// MsgID is the client message id (UNIQ_KEY), or OffsetMsgID when the
	// message has none.
	MsgID string `json:"msgId"`
	// OffsetMsgID names the store host and commit-log offset.
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	BrokerName      string            `json:"brokerName"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	Tags            string            `json:"tags"`
	Keys            []string          `json:"keys"`
	BornHost        string            `json:"bornHost"`
	BornTimestamp   int64             `json:"bornTimestamp"` // ms since the epoch
	StoreHost       string            `json:"storeHost"`
	StoreTimestamp  int64             `json:"storeTimestamp"` // ms since the epoch
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	SysFlag         int32             `json:"sysFlag"`
	Flag            int32             `json:"flag"`
	Properties      map[string]string `json:"properties"`
	// BodySize is the size of the body as stored (compressed, if it is).
	BodySize int `json:"bodySize"`
	// Body is the body, decompressed when it was stored compressed with
	// zlib; BodyEncoding says whether it is the text itself (BodyUTF8) or
	// base64 (BodyBase64, for bodies that are not valid UTF-8).
	Body         string `json:"body"`
	BodyEncoding string `json:"bodyEncoding"`

	stored *message.Message // as decoded, for resending
}

// messageOf describes a decoded message served by broker.
func messageOf(m *message.Message, broker string) *Message {
	out := &Message{
		MsgID:           m.ID(),
		OffsetMsgID:     message.OffsetID(m.StoreHost, m.CommitLogOffset),
		Topic:           m.Topic,
		BrokerName:      broker,
		QueueID:         m.QueueID,
		QueueOffset:     m.QueueOffset,
		CommitLogOffset: m.CommitLogOffset,
		Tags:            m.Tags(),
		Keys:            m.Keys(),
		BornHost:        hostString(m.BornHost.String()),
		BornTimestamp:   m.BornTimestamp,
		StoreHost:       hostString(m.StoreHost.String()),
		StoreTimestamp:  m.StoreTimestamp,
		ReconsumeTimes:  m.ReconsumeTimes,
		SysFlag:         m.SysFlag,
		Flag:            m.Flag,
		Properties:      m.Properties,
		BodySize:        len(m.Body),
		stored:          m,
	}
	if out.Keys == nil {
		out.Keys = []string{}
	}
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	body := m.Body
	if m.SysFlag&message.SysFlagCompressed != 0 {
		ct := m.SysFlag & message.SysFlagCompressionMask
		if ct == 0 || ct == message.SysFlagCompressionZlib {
			if b, err := inflate(body); err == nil {
				body = b
			}
		}
	}
	if utf8.Valid(body) {
		out.Body, out.BodyEncoding = string(body), BodyUTF8
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(body), BodyBase64
	}
	return out
}

func hostString(s string) string {
	if s == "invalid AddrPort" {
		return ""
	}
	return s
}

func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxInflatedBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxInflatedBody {
		return nil, errors.New("body too large")
	}
	return out, nil
}

// decodeRecords decodes stored records back to back.
func decodeRecords(body []byte) ([]*message.Message, error) {
	var out []*message.Message
	for len(body) > 0 {
		m, n, err := message.DecodeStored(body)
		if err != nil {
			return out, err
		}
		if n <= 0 || n > len(body) {
			return out, fmt.Errorf("stored record claims %d bytes of %d", n, len(body))
		}
		out = append(out, m)
		body = body[n:]
	}
	return out, nil
}

// brokersFor returns the masters to look a message up on: those of the
// topic's route, or every master when topic is empty.
func (c *Client) brokersFor(ctx context.Context, topic string) ([]Broker, error) {
	if topic == "" {
		return c.masters(ctx, "")
	}
	route, err := c.Route(ctx, topic)
	if err != nil {
		return nil, err
	}
	ms, _ := routeMasters(route)
	if len(ms) == 0 {
		return nil, errorf(ErrNoBroker, "topic %s: its route names no broker master", topic)
	}
	return ms, nil
}

// GetMessage looks a message up by id. An offset message id is looked up
// with VIEW_MESSAGE_BY_ID on the broker it names, then on the others;
// any other id (or an offset id not found that way) is taken as a client
// message id (UNIQ_KEY) and looked up with QUERY_MESSAGE in topic, which
// that needs. When several brokers hold the id, the newest message wins.
func (c *Client) GetMessage(ctx context.Context, id, topic string) (*Message, error) {
	if id == "" {
		return nil, invalidf("empty message id")
	}
	brokers, err := c.brokersFor(ctx, topic)
	if err != nil {
		return nil, err
	}
	host, offset, perr := message.ParseOffsetID(id)
	if perr == nil {
		// The broker the id names first.
		slices.SortStableFunc(brokers, func(a, b Broker) int {
			return boolRank(a.Addr == host.String()) - boolRank(b.Addr == host.String())
		})
		for _, b := range brokers {
			m, err := c.viewMessage(ctx, b, offset, topic)
			if err != nil {
				return nil, err
			}
			if m != nil && strings.EqualFold(m.OffsetMsgID, id) && (topic == "" || m.Topic == topic) {
				return m, nil
			}
		}
	}
	if topic == "" {
		if perr == nil {
			return nil, errorf(ErrMessageNotFound, "no broker has a message at offset id %s; to look the id up as a client message id, give its topic", id)
		}
		return nil, invalidf("%s is not an offset message id; to look up a client message id, give its topic", id)
	}
	var found []*Message
	for _, b := range brokers {
		h := &wire.QueryMessageRequestHeader{Topic: topic, Key: id, MaxNum: DefaultQueryMax, BeginTimestamp: 0, EndTimestamp: maxTimestamp, UniqueKeyQuery: true}
		msgs, err := c.queryMessages(ctx, b, h)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.stored.UniqKey() == id || strings.EqualFold(m.OffsetMsgID, id) {
				found = append(found, m)
			}
		}
	}
	if len(found) == 0 {
		return nil, errorf(ErrMessageNotFound, "message %s not found in topic %s", id, topic)
	}
	return slices.MaxFunc(found, func(a, b *Message) int { return cmpInt64(a.StoreTimestamp, b.StoreTimestamp) }), nil
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

// viewMessage asks broker b for the message at a commit-log offset; nil
// when it has none there.
func (c *Client) viewMessage(ctx context.Context, b Broker, offset int64, topic string) (*Message, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.ViewMessageByID, &wire.ViewMessageByIDRequestHeader{Offset: offset, Topic: topic}, nil))
	if HasCode(err, wire.SystemError, wire.QueryNotFound, wire.InvalidParameter, wire.TopicNotExist) {
		return nil, nil // Java answers SYSTEM_ERROR for an offset it has no message at
	}
	if err != nil {
		return nil, err
	}
	msgs, err := decodeRecords(resp.Body)
	if err != nil {
		return nil, badBody(t, wire.ViewMessageByID, err)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return messageOf(msgs[0], b.Name), nil
}

// queryMessages sends QUERY_MESSAGE to one broker; no match is no error.
func (c *Client) queryMessages(ctx context.Context, b Broker, h *wire.QueryMessageRequestHeader) ([]*Message, error) {
	t := brokerTarget(b)
	resp, err := c.invoke(ctx, t, request(wire.QueryMessage, h, nil))
	if HasCode(err, wire.QueryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	msgs, err := decodeRecords(resp.Body)
	if err != nil {
		return nil, badBody(t, wire.QueryMessage, err)
	}
	out := make([]*Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, messageOf(m, b.Name))
	}
	return out, nil
}

// MessageQuery selects messages by key.
type MessageQuery struct {
	Topic string
	Key   string // one of the messages' KEYS
	// Begin and End bound the store time. Zero Begin means the start;
	// zero End means now.
	Begin, End time.Time
	// Max is the most messages returned; 0 means DefaultQueryMax.
	Max int
}

// QueryMessages returns the messages of a topic carrying a key, oldest
// first.
func (c *Client) QueryMessages(ctx context.Context, q MessageQuery) ([]*Message, error) {
	if q.Topic == "" || q.Key == "" {
		return nil, invalidf("message query needs a topic and a key")
	}
	max, begin, end, err := queryBounds(q.Max, DefaultQueryMax, q.Begin, q.End)
	if err != nil {
		return nil, err
	}
	q.Max = max
	brokers, err := c.brokersFor(ctx, q.Topic)
	if err != nil {
		return nil, err
	}
	out := []*Message{}
	for _, b := range brokers {
		h := &wire.QueryMessageRequestHeader{Topic: q.Topic, Key: q.Key, MaxNum: int32(min(q.Max, math.MaxInt32)), BeginTimestamp: begin, EndTimestamp: end}
		msgs, err := c.queryMessages(ctx, b, h)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			// Indexes hash keys; keep only real matches, as RocketMQ clients do.
			if m.Topic == q.Topic && slices.Contains(m.Keys, q.Key) {
				out = append(out, m)
			}
		}
	}
	sortByStoreTime(out)
	if len(out) > q.Max {
		out = out[:q.Max]
	}
	return out, nil
}

// queryBounds checks the Max of a query and its store-time bounds: it
// returns Max, or def for 0, and the bounds in ms since the epoch, a zero
// begin being the start of time and a zero end now.
func queryBounds(max, def int, begin, end time.Time) (int, int64, int64, error) {
	if max < 0 {
		return 0, 0, 0, invalidf("max %d: must be positive", max)
	}
	if max == 0 {
		max = def
	}
	b, e := int64(0), time.Now().UnixMilli()
	if !begin.IsZero() {
		b = begin.UnixMilli()
	}
	if !end.IsZero() {
		e = end.UnixMilli()
	}
	if b > e {
		return 0, 0, 0, invalidf("the begin time is after the end time")
	}
	return max, b, e, nil
}

// sortByStoreTime orders messages oldest first, those stored in the same
// millisecond by offset message id.
func sortByStoreTime(ms []*Message) {
	slices.SortStableFunc(ms, func(a, b *Message) int {
		if a.StoreTimestamp != b.StoreTimestamp {
			return cmpInt64(a.StoreTimestamp, b.StoreTimestamp)
		}
		return strings.Compare(a.OffsetMsgID, b.OffsetMsgID)
	})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
