package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).
//
// The header names the topic and queue (a negative queue id lets the
// engine choose) and carries the message's flag, sysFlag, born time and
// properties; the body is the message body, stored as sent (a zlib body
// keeps sysFlag bit 0). The born host is the client's TCP address. An
// unknown topic is created with the queue count the producer assumed
// (Options.AutoCreateTopics). The engine adds a UNIQ_KEY when the producer
// gave none and stores TRAN_MSG messages as half messages. On a FIFO topic
// the Go client's sharding key is the message group (sharding.go). A send
// to %RETRY%<group> is a consumer's failed message
// coming back (the Go client's sendMessageBackAsNormal): when its
// reconsumeTimes exceeds maxReconsumeTimes it goes to %DLQ%<group>
// instead.

func (b *Broker) sendMessage(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	m := messages.Get().(*message.Message)
	defer putMessage(m)
	// The properties go straight into the message (see fillEncoded).
	var h wire.SendMessageRequestHeader
	props, err := req.DecodeSendHeader(&h, m.EncodedProperties[:0])
	if err != nil {
		return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
	}
	if b.hooked {
		clientGroup(ctx, h.ProducerGroup)
	}
	if h.Batch || req.RequestCode() == wire.SendBatchMessage {
		return b.sendBatch(ctx, c, req, &h)
	}
	if h.Topic == message.TopicAutoCreate {
		return errorResponse(req, fmt.Errorf("%w: %s is the template of auto-created topics", errReservedTopic, h.Topic))
	}
	m.EncodedProperties = props
	b.fillEncoded(m, c, &h, req.Body)
	queue := h.QueueID
	if queue < 0 {
		queue = engine.AnyQueue
	}
	if err := b.autoCreate(ctx, &h); err != nil {
		return errorResponse(req, err)
	}
	b.withMessageGroup(m)
	if message.IsRetryTopic(h.Topic) {
		server.Detach(ctx) // may create the retry or dead-letter topic
		group := strings.TrimPrefix(h.Topic, message.RetryTopicPrefix)
		var err error
		if queue, err = b.prepareRetry(ctx, m, group, &h); err != nil {
			return errorResponse(req, err)
		}
	}
	// Before the message is stored: once it is, a replier may consume
	// it and reply before this goroutine runs again.
	b.noteRequester(c, h.ProducerGroup, m)
	b.detachForFlush(ctx)
	res, err := b.eng.SendToQueue(ctx, m, queue)
	code := wire.Success
	switch {
	case errors.Is(err, engine.ErrReplicaTimeout):
		// Stored, not confirmed by the replicas: the producer gets the
		// result with FLUSH_SLAVE_TIMEOUT, as from Java's broker.
		code = wire.FlushSlaveTimeout
	case err != nil:
		return errorResponse(req, err)
	}
	b.noteTopic(m.Topic)
	return b.sendAnswer(req, res, code)
}

// sendAnswer is the response to a single send: the command, its header
// and the text of the offset message id, in one allocation.
type sendAnswer struct {
	cmd wire.Command
	hdr wire.SendMessageResponseHeader
	id  [message.OffsetIDMaxLen]byte
}

// sendAnswer returns the response to a send that res describes: SUCCESS,
// or FLUSH_SLAVE_TIMEOUT for a message stored but not confirmed by the
// replicas.
func (b *Broker) sendAnswer(req *wire.Command, res engine.SendResult, code wire.ResponseCode) *wire.Command {
	a := &sendAnswer{cmd: wire.ResponseTo(req, code, "")}
	id := message.AppendOffsetID(a.id[:0], res.StoreHost, res.CommitLogOffset)
	a.hdr = wire.SendMessageResponseHeader{
		// The id's text lives in a, which the string keeps alive.
		MsgID:         unsafe.String(&id[0], len(id)),
		QueueID:       res.QueueID,
		QueueOffset:   res.QueueOffset,
		TransactionID: res.MsgID,
		MsgRegion:     b.opts.Region,
		TraceOn:       "true",
	}
	a.cmd.SetHeader(&a.hdr)
	return &a.cmd
}

// detachForFlush lets an inline send wait for the disk: with FlushSync
// every send does.
func (b *Broker) detachForFlush(ctx context.Context) {
	if b.eng.FlushMode() == engine.FlushSync || b.eng.WaitsForReplicas() {
		server.Detach(ctx)
	}
}

// autoCreate creates the topic of a send when it does not exist, with
// the queue count the producer assumed: it routed the send by TBW102's
// route capped at defaultTopicQueueNums.
func (b *Broker) autoCreate(ctx context.Context, h *wire.SendMessageRequestHeader) error {
	if !b.opts.AutoCreateTopics || h.DefaultTopicQueueNums <= 0 || message.IsRetryTopic(h.Topic) || message.IsDLQTopic(h.Topic) {
		return nil
	}
	if _, err := b.eng.Topic(h.Topic); !errors.Is(err, engine.ErrTopicNotFound) {
		return nil
	}
	server.Detach(ctx) // creating a topic writes to disk
	if message.ValidateUserTopic(h.Topic) != nil {
		return nil // the engine refuses it with the reason
	}
	n := h.DefaultTopicQueueNums
	if tbw, err := b.eng.Topic(message.TopicAutoCreate); err == nil {
		n = min(n, tbw.WriteQueues)
	}
	n = min(n, engine.MaxQueues)
	return b.ensureTopic(meta.Topic{Name: h.Topic, ReadQueues: n, WriteQueues: n, Perm: meta.PermRW})
}

// messages recycles the messages of single sends: the engine keeps
// nothing of a message once it is stored.
var messages = sync.Pool{New: func() any { return new(message.Message) }}

// noteRequester registers the client a request message names in
// REPLY_TO_CLIENT, as a producer of group on the connection the request
// came on, when the broker does not know that client yet: the reply goes
// back on that connection. The Go client heartbeats before a request only
// when the topic has no route, so a requester that starts and asks at
// once is not known until its periodic heartbeat, up to 30 s later, and
// every reply before that would fail. A client the broker knows keeps
// what its heartbeats said.
func (b *Broker) noteRequester(c *server.Conn, group string, m *message.Message) {
	id := m.Property(message.PropertyReplyToClient)
	if id == "" {
		return
	}
	clients := b.eng.Clients()
	if _, ok := clients.Client(registry.ClientID(id)); ok {
		return
	}
	clients.Heartbeat(registry.Heartbeat{Client: registry.ClientID(id), Protocol: Protocol, Conn: c, Producers: []string{group}})
}

// putMessage returns m to messages, keeping the memory of its encoded
// properties.
func putMessage(m *message.Message) {
	p := m.EncodedProperties[:0]
	if cap(p) > 4<<10 {
		p = nil
	}
	*m = message.Message{EncodedProperties: p}
	messages.Put(m)
}

// newMessage builds the message a send request carries; see fillMessage.
func (b *Broker) newMessage(c *server.Conn, h *wire.SendMessageRequestHeader, body []byte, props string) *message.Message {
	m := new(message.Message)
	b.fillMessage(m, c, h, body, props)
	return m
}

// fillMessage sets m to the message a send request carries, reusing the
// memory of m.EncodedProperties. Its properties stay encoded, as the
// client sent them, with the CLUSTER property appended: a later pair wins
// over an earlier one of the same name, as decoding the string into a
// map would have it. The engine decodes them only when it must.
func (b *Broker) fillMessage(m *message.Message, c *server.Conn, h *wire.SendMessageRequestHeader, body []byte, props string) {
	m.EncodedProperties = append(m.EncodedProperties[:0], props...)
	b.fillEncoded(m, c, h, body)
}

// fillEncoded is fillMessage for properties already in
// m.EncodedProperties.
func (b *Broker) fillEncoded(m *message.Message, c *server.Conn, h *wire.SendMessageRequestHeader, body []byte) {
	p := m.EncodedProperties
	if len(p) > 0 && p[len(p)-1] != 2 {
		p = append(p, 2) // end the last pair, as decoding would
	}
	p = append(p, message.PropertyCluster...)
	p = append(p, 1)
	p = append(p, b.opts.ClusterName...)
	p = append(p, 2)
	*m = message.Message{
		Topic:             h.Topic,
		Body:              body,
		Flag:              h.Flag,
		SysFlag:           h.SysFlag,
		EncodedProperties: p,
		BornTimestamp:     h.BornTimestamp,
		BornHost:          bornHost(c),
		ReconsumeTimes:    h.ReconsumeTimes,
	}
}

// prepareRetry handles a send to the retry topic of group: it makes sure
// the topic exists and, when the message has been reconsumed more often
// than allowed, turns it into a dead letter of the group. It returns the
// queue to send to.
func (b *Broker) prepareRetry(ctx context.Context, m *message.Message, group string, h *wire.SendMessageRequestHeader) (int32, error) {
	g, err := b.group(ctx, group)
	if err != nil {
		return 0, err
	}
	m.LoadProperties()
	if m.Properties == nil {
		m.Properties = make(map[string]string, 4)
	}
	max := g.Attempts() - 1
	if h.MaxReconsumeTimes != nil {
		max = *h.MaxReconsumeTimes
	}
	if m.ReconsumeTimes <= max {
		if err := b.ensureTopic(systemTopic(m.Topic)); err != nil {
			return 0, err
		}
		return engine.AnyQueue, nil
	}
	dlq := message.DLQTopic(group)
	if err := b.ensureTopic(systemTopic(dlq)); err != nil {
		return 0, err
	}
	origin := m.Properties[message.PropertyRetryTopic]
	if origin == "" {
		origin = m.Topic
	}
	if m.Properties[message.PropertyDLQOriginTopic] == "" {
		m.Properties[message.PropertyDLQOriginTopic] = origin
	}
	if m.Properties[message.PropertyDLQOriginMessageID] == "" {
		id := m.Properties[message.PropertyOriginMessageID]
		if id == "" {
			id = m.UniqKey()
		}
		if id != "" {
			m.Properties[message.PropertyDLQOriginMessageID] = id
		}
	}
	for _, k := range [...]string{message.PropertyDelayLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		delete(m.Properties, k)
	}
	m.Topic = dlq
	return 0, nil
}

// sendBatch stores the messages of a SEND_BATCH_MESSAGE body as one
// append. Inner messages share the header's topic, queue, sysFlag and born
// time; those without a UNIQ_KEY get one from the engine. The response's
// msgId lists the offset ids of all of them, comma-separated.
func (b *Broker) sendBatch(ctx context.Context, c *server.Conn, req *wire.Command, h *wire.SendMessageRequestHeader) *wire.Command {
	if h.SysFlag&message.SysFlagCompressed != 0 {
		return errorResponse(req, fmt.Errorf("%w: compressed batch bodies are not supported", engine.ErrInvalidMessage))
	}
	if message.TransactionType(h.SysFlag) != message.SysFlagTransactionNone {
		return errorResponse(req, errTransactionalBatch)
	}
	if message.IsRetryTopic(h.Topic) || h.Topic == message.TopicAutoCreate {
		return errorResponse(req, fmt.Errorf("%w: cannot send a batch to %s", errReservedTopic, h.Topic))
	}
	if err := b.autoCreate(ctx, h); err != nil {
		return errorResponse(req, err)
	}
	entries, err := wire.DecodeBatch(req.Body)
	if err != nil {
		return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
	}
	if len(entries) == 0 {
		return errorResponse(req, fmt.Errorf("%w: empty batch", engine.ErrEmptyBody))
	}
	msgs := make([]*message.Message, len(entries))
	for i, e := range entries {
		m := b.newMessage(c, h, e.Body, e.Properties)
		m.Flag = e.Flag
		if m.IsTransactionPrepared() {
			return errorResponse(req, errTransactionalBatch)
		}
		msgs[i] = m
	}
	queue := h.QueueID
	if queue < 0 {
		queue = engine.AnyQueue
	}
	b.detachForFlush(ctx)
	res, err := b.eng.SendBatch(ctx, msgs, queue)
	code := wire.Success
	switch {
	case errors.Is(err, engine.ErrReplicaTimeout):
		code = wire.FlushSlaveTimeout // stored, not confirmed
	case err != nil:
		return errorResponse(req, err)
	}
	b.noteTopic(h.Topic)
	ids := make([]byte, 0, len(res)*33)
	for i, r := range res {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = message.AppendOffsetID(ids, r.StoreHost, r.CommitLogOffset)
	}
	resp := wire.NewResponse(req, code, "")
	resp.SetHeader(&wire.SendMessageResponseHeader{
		MsgID:       string(ids),
		QueueID:     res[0].QueueID,
		QueueOffset: res[0].QueueOffset,
		MsgRegion:   b.opts.Region,
		TraceOn:     "true",
	})
	return resp
}

// sendReplyMessage serves SEND_REPLY_MESSAGE (324) and its V2 (325): the
// reply of a request/reply exchange, pushed to the requesting client named
// by the REPLY_TO_CLIENT property with PUSH_REPLY_MESSAGE_TO_CLIENT (326).
// The reply is not stored. Its body is never compressed, whatever sysFlag
// says (the Go client sets the bit for large bodies it did not compress).
func (b *Broker) sendReplyMessage(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.SendMessageRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	props, _ := message.DecodeProperties([]byte(h.Properties))
	target := props[message.PropertyReplyToClient]
	if target == "" {
		return errorResponse(req, fmt.Errorf("%w: reply message without %s", engine.ErrInvalidMessage, message.PropertyReplyToClient))
	}
	info, ok := b.eng.Clients().Client(registry.ClientID(target))
	conn, isRemoting := info.Conn.(*server.Conn)
	if !ok || !isRemoting {
		return errorResponse(req, fmt.Errorf("%w: requester %s is not connected", errConsumerOffline, target))
	}
	h.SysFlag &^= message.SysFlagCompressed
	push := wire.NewRequest(wire.PushReplyMessageToClient, nil)
	push.Body = req.Body
	push.EncodeHeader(&h)
	push.SetExt("bornHost", c.RemoteAddr())
	push.SetExt("storeHost", b.opts.Addr)
	push.SetExt("storeTimestamp", strconv.FormatInt(time.Now().UnixMilli(), 10))
	resp, err := conn.Invoke(ctx, push)
	if err != nil {
		return errorResponse(req, fmt.Errorf("broker: push reply to %s: %w", target, err))
	}
	if resp.ResponseCode() != wire.Success {
		return wire.NewResponse(req, wire.SystemError, fmt.Sprintf("push reply to %s: %s", target, resp.Remark))
	}
	out := success(req)
	out.EncodeHeader(&wire.SendMessageResponseHeader{MsgID: props[message.PropertyUniqKey], QueueID: h.QueueID})
	return out
}
