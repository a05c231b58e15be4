package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// maxQueryMessages bounds the messages one QUERY_MESSAGE returns.
const maxQueryMessages = 64

// indexWait bounds how long a look-up waits for the engine to index the
// messages stored before it, so that a message is found right after its
// send was acknowledged.
const indexWait = time.Second

// queryMessage serves QUERY_MESSAGE (12): the messages of a topic whose
// KEYS contain key, stored within [beginTimestamp, endTimestamp], or with
// _UNIQUE_KEY_QUERY=true the message whose id (UNIQ_KEY or offset id) is
// key. The body is their stored records back to back; none is
// QUERY_NOT_FOUND.
func (b *Broker) queryMessage(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.QueryMessageRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	if h.MaxNum <= 0 {
		return errorResponse(req, fmt.Errorf("%w: maxNum %d", errInvalidRequest, h.MaxNum))
	}
	b.waitIndexed(ctx)
	var body []byte
	if h.UniqueKeyQuery {
		m, err := b.eng.MessageByIDInTopic(h.Key, h.Topic)
		if err == nil {
			if body, err = appendRecord(body, m); err != nil {
				return errorResponse(req, err)
			}
		}
	} else {
		end := h.EndTimestamp
		if end <= 0 {
			end = time.Now().UnixMilli()
		}
		msgs, err := b.eng.MessagesByKey(h.Topic, h.Key, h.BeginTimestamp, end, int(min(h.MaxNum, maxQueryMessages)))
		if err != nil {
			return errorResponse(req, err)
		}
		for _, m := range msgs {
			if body, err = appendRecord(body, m); err != nil {
				return errorResponse(req, err)
			}
		}
	}
	if len(body) == 0 {
		return errorResponse(req, fmt.Errorf("%w: no message with key %q in %s", engine.ErrMessageNotFound, h.Key, h.Topic))
	}
	st := b.eng.Stats()
	resp := success(req)
	resp.EncodeHeader(&wire.QueryMessageResponseHeader{IndexLastUpdateTimestamp: time.Now().UnixMilli(), IndexLastUpdatePhyoffset: st.DispatchedOffset})
	resp.Body = body
	return resp
}

// waitIndexed waits, briefly, until every message stored so far is
// indexed.
func (b *Broker) waitIndexed(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, indexWait)
	defer cancel()
	_ = b.eng.WaitDispatched(ctx)
}
