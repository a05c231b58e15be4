package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/grpc/convert"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// Errors of the front-end itself, each answered with its own code.
var (
	errBadRequest       = errors.New("bad request")
	errClientIDRequired = errors.New("the x-mq-client-id header is required")
	errUnknownClient    = errors.New("client has not declared its settings on the telemetry stream")
	errClientType       = errors.New("unrecognized client type")
	errNotImplemented   = errors.New("not implemented")
	errUnsupported      = errors.New("not supported")
	errIllegalTopic     = errors.New("illegal topic")
	errIllegalGroup     = errors.New("illegal consumer group")
	errIllegalTag       = errors.New("illegal message tag")
	errIllegalKey       = errors.New("illegal message key")
	errIllegalMsgGroup  = errors.New("illegal message group")
	errIllegalProperty  = errors.New("illegal message property")
	errIllegalMessageID = errors.New("illegal message id")
	errIllegalInvisible = errors.New("illegal invisible duration")
	errIllegalDelivery  = errors.New("illegal delivery time")
	errIllegalPolling   = errors.New("illegal long-polling time")
	errIllegalFilter    = errors.New("illegal filter expression")
	errInvalidTxID      = errors.New("invalid transaction id")
	errBodyTooLarge     = errors.New("message body too large")
	errTooManyRequests  = errors.New("too many requests")
)

// statusCodes is the one table that turns errors into status codes. It is
// searched in order with errors.Is, so specific errors come before the
// general ones they may wrap; an error matching none is INTERNAL_ERROR.
// The status message is always the error's own text.
//
// Choices worth knowing, with the client behaviour they lean on:
//
//   - An unknown or expired receipt handle is INVALID_RECEIPT_HANDLE: clients
//     give up on it instead of retrying forever.
//   - A closed engine is INTERNAL_ERROR, which simple consumers retry.
//   - A full or failed disk is INTERNAL_SERVER_ERROR, the server-side
//     failure a producer retries elsewhere; the message says why.
//   - A message refused for its type is MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
//     which producers do not retry.
//   - A send, receive or pull a hook rejected (engine.ErrRejected) is
//     FORBIDDEN with the hook's reason, as RocketMQ's proxy answers its
//     authorization hook's denials; a hook that fails
//     (engine.ErrHookFailed) is INTERNAL_SERVER_ERROR, which producers
//     retry.
//   - A call whose credentials an Authenticator refused
//     (hook.ErrUnauthenticated) is UNAUTHORIZED, one an Authorizer denied
//     (hook.ErrDenied) FORBIDDEN, as RocketMQ's proxy answers them, with
//     the reason.
//   - A recall of a message no longer waiting for delivery is NOT_FOUND;
//     MESSAGE_NOT_FOUND would read as success to clients.
var statusCodes = []struct {
	err  error
	code rmqpb.Code
}{
	{errClientIDRequired, rmqpb.Code_CLIENT_ID_REQUIRED},
	{errUnknownClient, rmqpb.Code_UNRECOGNIZED_CLIENT_TYPE},
	{errClientType, rmqpb.Code_UNRECOGNIZED_CLIENT_TYPE},
	{errNotImplemented, rmqpb.Code_NOT_IMPLEMENTED},
	{errUnsupported, rmqpb.Code_UNSUPPORTED},
	{errIllegalTopic, rmqpb.Code_ILLEGAL_TOPIC},
	{errIllegalGroup, rmqpb.Code_ILLEGAL_CONSUMER_GROUP},
	{errIllegalTag, rmqpb.Code_ILLEGAL_MESSAGE_TAG},
	{errIllegalKey, rmqpb.Code_ILLEGAL_MESSAGE_KEY},
	{errIllegalMsgGroup, rmqpb.Code_ILLEGAL_MESSAGE_GROUP},
	{errIllegalProperty, rmqpb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
	{errIllegalMessageID, rmqpb.Code_ILLEGAL_MESSAGE_ID},
	{errIllegalInvisible, rmqpb.Code_ILLEGAL_INVISIBLE_TIME},
	{errIllegalDelivery, rmqpb.Code_ILLEGAL_DELIVERY_TIME},
	{errIllegalPolling, rmqpb.Code_ILLEGAL_POLLING_TIME},
	{errIllegalFilter, rmqpb.Code_ILLEGAL_FILTER_EXPRESSION},
	{errInvalidTxID, rmqpb.Code_INVALID_TRANSACTION_ID},
	{errBodyTooLarge, rmqpb.Code_MESSAGE_BODY_TOO_LARGE},
	{errTooManyRequests, rmqpb.Code_TOO_MANY_REQUESTS},
	{errBadRequest, rmqpb.Code_BAD_REQUEST},

	{convert.ErrMissingField, rmqpb.Code_BAD_REQUEST},
	{convert.ErrIllegalTopic, rmqpb.Code_ILLEGAL_TOPIC},
	{convert.ErrIllegalMessageID, rmqpb.Code_ILLEGAL_MESSAGE_ID},
	{convert.ErrIllegalTag, rmqpb.Code_ILLEGAL_MESSAGE_TAG},
	{convert.ErrIllegalKey, rmqpb.Code_ILLEGAL_MESSAGE_KEY},
	{convert.ErrIllegalGroup, rmqpb.Code_ILLEGAL_MESSAGE_GROUP},
	{convert.ErrIllegalPropertyKey, rmqpb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
	{convert.ErrIllegalProperty, rmqpb.Code_BAD_REQUEST},
	{convert.ErrIllegalDelivery, rmqpb.Code_ILLEGAL_DELIVERY_TIME},
	{convert.ErrEmptyBody, rmqpb.Code_MESSAGE_BODY_EMPTY},
	{convert.ErrBodyTooLarge, rmqpb.Code_MESSAGE_BODY_TOO_LARGE},
	{convert.ErrCorruptedBody, rmqpb.Code_MESSAGE_CORRUPTED},
	{convert.ErrPropertiesTooLarge, rmqpb.Code_MESSAGE_PROPERTIES_TOO_LARGE},
	{convert.ErrTypeConflict, rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
	{convert.ErrUnsupportedType, rmqpb.Code_UNSUPPORTED},

	{engine.ErrClosed, rmqpb.Code_INTERNAL_ERROR},
	{engine.ErrDiskFull, rmqpb.Code_INTERNAL_SERVER_ERROR},
	{engine.ErrDiskFailed, rmqpb.Code_INTERNAL_SERVER_ERROR},
	{engine.ErrNotMaster, rmqpb.Code_INTERNAL_SERVER_ERROR}, // a send, receive, ack or invisibility change on a replica: as the proxy answers a slave store's SERVICE_NOT_AVAILABLE; clients retry
	{engine.ErrInSyncReplicasNotEnough, rmqpb.Code_HA_NOT_AVAILABLE},
	{engine.ErrReplicaTimeout, rmqpb.Code_SLAVE_PERSISTENCE_TIMEOUT},
	{engine.ErrTopicNotFound, rmqpb.Code_TOPIC_NOT_FOUND},
	{engine.ErrGroupNotFound, rmqpb.Code_CONSUMER_GROUP_NOT_FOUND},
	{engine.ErrNoOffset, rmqpb.Code_OFFSET_NOT_FOUND},
	{engine.ErrInvalidTopic, rmqpb.Code_ILLEGAL_TOPIC},
	{engine.ErrInvalidGroup, rmqpb.Code_ILLEGAL_CONSUMER_GROUP},
	{engine.ErrReservedName, rmqpb.Code_FORBIDDEN},
	{engine.ErrNoPermission, rmqpb.Code_FORBIDDEN},
	{engine.ErrRejected, rmqpb.Code_FORBIDDEN},
	{hook.ErrUnauthenticated, rmqpb.Code_UNAUTHORIZED},
	{hook.ErrDenied, rmqpb.Code_FORBIDDEN},
	{engine.ErrHookFailed, rmqpb.Code_INTERNAL_SERVER_ERROR},
	{engine.ErrInvalidQueue, rmqpb.Code_BAD_REQUEST},
	{engine.ErrEmptyBody, rmqpb.Code_MESSAGE_BODY_EMPTY},
	{engine.ErrMessageTooLarge, rmqpb.Code_MESSAGE_BODY_TOO_LARGE},
	{engine.ErrMessageTypeMismatch, rmqpb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
	{engine.ErrInvalidFilter, rmqpb.Code_ILLEGAL_FILTER_EXPRESSION},
	{engine.ErrFilterDisabled, rmqpb.Code_ILLEGAL_FILTER_EXPRESSION},
	{engine.ErrInvalidHandle, rmqpb.Code_INVALID_RECEIPT_HANDLE},
	{engine.ErrHandleExpired, rmqpb.Code_INVALID_RECEIPT_HANDLE},
	{engine.ErrTransactionNotFound, rmqpb.Code_INVALID_TRANSACTION_ID},
	{engine.ErrTransactionResolved, rmqpb.Code_INVALID_TRANSACTION_ID},
	{engine.ErrTransactionGroup, rmqpb.Code_INVALID_TRANSACTION_ID},
	{engine.ErrNotRecallable, rmqpb.Code_NOT_FOUND},
	{engine.ErrOffsetOutOfRange, rmqpb.Code_ILLEGAL_OFFSET},
	{engine.ErrMessageNotFound, rmqpb.Code_MESSAGE_NOT_FOUND},
	{engine.ErrBeyondTimerHorizon, rmqpb.Code_ILLEGAL_DELIVERY_TIME}, // before ErrInvalidMessage, which it is too
	{engine.ErrInvalidMessage, rmqpb.Code_BAD_REQUEST},
	{engine.ErrInvalidArgument, rmqpb.Code_BAD_REQUEST},
	{context.DeadlineExceeded, rmqpb.Code_PROXY_TIMEOUT},
	{context.Canceled, rmqpb.Code_PROXY_TIMEOUT},
}

// codeOf returns the status code of err.
func codeOf(err error) rmqpb.Code {
	for _, c := range statusCodes {
		if errors.Is(err, c.err) {
			return c.code
		}
	}
	return rmqpb.Code_INTERNAL_ERROR
}

// statusOf returns the status of err; nil is OK.
func statusOf(err error) *rmqpb.Status {
	if err == nil {
		return okStatus()
	}
	return &rmqpb.Status{Code: codeOf(err), Message: err.Error()}
}

func okStatus() *rmqpb.Status { return &rmqpb.Status{Code: rmqpb.Code_OK, Message: "OK"} }

// badRequest wraps a description of what is wrong with a request.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}
