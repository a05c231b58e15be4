package broker

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// viewMessageByID serves VIEW_MESSAGE_BY_ID (33): the message stored at a
// commit-log offset (decoded from an offset message id), as one stored
// record.
func (b *Broker) viewMessageByID(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.ViewMessageByIDRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	body, err := b.storedRecord(h.Offset)
	if err != nil {
		return errorResponse(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}

// storedRecord returns the message at a commit-log offset as one stored
// record.
func (b *Broker) storedRecord(offset int64) ([]byte, error) {
	m, err := b.eng.MessageAt(offset)
	if err != nil {
		return nil, err
	}
	return appendRecord(nil, m)
}
