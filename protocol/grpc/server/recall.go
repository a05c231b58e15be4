package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// RecallMessage cancels a scheduled (DELAY) message that has not been
// delivered yet, named by the recall handle its SendResultEntry carried.
// A message already delivered or recalled is NOT_FOUND.
func (s *Server) RecallMessage(ctx context.Context, req *rmqpb.RecallMessageRequest) (*rmqpb.RecallMessageResponse, error) {
	topic, id, err := parseRecallHandle(req.GetRecallHandle())
	if err != nil {
		return &rmqpb.RecallMessageResponse{Status: statusOf(err)}, nil
	}
	if t := convert.ResourceName(req.GetTopic()); t != "" && t != topic {
		return &rmqpb.RecallMessageResponse{Status: statusOf(badRequest("the recall handle is for topic %s, not %s", topic, t))}, nil
	}
	if err := s.eng.Recall(ctx, topic, id); err != nil {
		return &rmqpb.RecallMessageResponse{Status: statusOf(fmt.Errorf("recall message %s of %s: %w", id, topic, err)), MessageId: id}, nil
	}
	return &rmqpb.RecallMessageResponse{Status: okStatus(), MessageId: id}, nil
}

// Recall handles name a scheduled message by its topic and message id:
// "v1 <topic> <message id>", base64url-encoded. Topics hold no spaces, so
// the message id is everything after the second one.
const recallVersion = "v1"

// recallHandle returns the recall handle of a scheduled message.
func recallHandle(topic, msgID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(recallVersion + " " + topic + " " + msgID))
}

// parseRecallHandle returns the topic and message id a recall handle
// names.
func parseRecallHandle(h string) (topic, msgID string, err error) {
	if h == "" {
		return "", "", badRequest("RecallMessage needs a recall_handle")
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "", "", badRequest("recall handle %q is not one this server issued", h)
	}
	parts := strings.SplitN(string(b), " ", 3)
	if len(parts) != 3 || parts[0] != recallVersion || parts[2] == "" || message.ValidateTopic(parts[1]) != nil {
		return "", "", badRequest("recall handle %q is not one this server issued", h)
	}
	return parts[1], parts[2], nil
}
