package broker

import (
	"errors"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// errorCodes is the one table that turns errors into remoting response
// codes. It is searched in order with errors.Is, so more specific errors
// come before the general ones they may wrap. An error matching none of
// them is a SYSTEM_ERROR. The remark of an error response is always the
// error's own text.
//
// Choices worth knowing, with the client behaviour they lean on:
//
//   - A malformed header or body is INVALID_PARAMETER: retrying the same
//     request cannot help, and Go and Java clients surface it at once.
//   - A closed engine is SERVICE_NOT_AVAILABLE, which producers retry on
//     another broker.
//   - A full or failed disk is SERVICE_NOT_AVAILABLE too, as Java's broker
//     answers a put its store refuses; the remark says the disk is full
//     (or failed) and how full.
//   - A write to a replica (engine.ErrNotMaster) is SERVICE_NOT_AVAILABLE,
//     as Java's broker answers a put to a slave's store: the Go and Java
//     producers retry it on another broker, and the remark says the
//     broker is a replica.
//   - With sync replication, a send refused while too few replicas are
//     in sync (engine.ErrInSyncReplicasNotEnough) is SYSTEM_ERROR, as
//     Java answers IN_SYNC_REPLICAS_NOT_ENOUGH: nothing was stored, and
//     producers retry it. A send stored but not confirmed by the
//     replicas in time (engine.ErrReplicaTimeout) is FLUSH_SLAVE_TIMEOUT
//     with the send's result, which producers report and do not retry.
//   - A refused message (empty, too large, bad properties, wrong type for
//     the topic) is MESSAGE_ILLEGAL, which producers do not retry.
//   - A reserved name (system topic, light queue) and a read- or
//     write-protected topic are NO_PERMISSION.
//   - A send, pull or pop a hook rejected (engine.ErrRejected) is
//     NO_PERMISSION, with the hook's reason as the remark: Java's broker
//     answers whatever code its hook's AbortProcessException names, and
//     its own authorization hook names NO_PERMISSION; a rejection is a
//     policy decision, not a malformed message (MESSAGE_ILLEGAL). A hook
//     that fails (engine.ErrHookFailed) is a SYSTEM_ERROR, which clients
//     retry.
//   - A request whose credentials an Authenticator refused
//     (hook.ErrUnauthenticated) or whose action an Authorizer denied
//     (hook.ErrDenied) is NO_PERMISSION, with the reason as the remark,
//     as RocketMQ's ACL answers both: producers and consumers do not
//     retry it, and the remark says which it was.
//   - A missing message is QUERY_NOT_FOUND; a missing stored offset too,
//     and a missing ACL user. An ACL user or policy that does not check
//     is INVALID_PARAMETER.
//   - An expression type the broker has switched off (SQL92) is a
//     SYSTEM_ERROR, as in Java; a subscription that does not parse is
//     SUBSCRIPTION_PARSE_FAILED.
var errorCodes = []struct {
	err  error
	code wire.ResponseCode
}{
	{engine.ErrClosed, wire.ServiceNotAvailable},
	{engine.ErrDiskFull, wire.ServiceNotAvailable},
	{engine.ErrDiskFailed, wire.ServiceNotAvailable},
	{engine.ErrNotMaster, wire.ServiceNotAvailable},
	{engine.ErrInSyncReplicasNotEnough, wire.SystemError},
	{engine.ErrReplicaTimeout, wire.FlushSlaveTimeout},
	{errNotSupported, wire.RequestCodeNotSupported},
	{errSubscriptionMissing, wire.SubscriptionNotExist},
	{errSubscriptionParse, wire.SubscriptionParseFailed},
	{engine.ErrInvalidFilter, wire.SubscriptionParseFailed},
	{engine.ErrFilterDisabled, wire.SystemError},
	{errSubscriptionOld, wire.SubscriptionNotLatest},
	{errNoConsumers, wire.SystemError},
	{errConsumerOffline, wire.ConsumerNotOnline},
	{errClientOffline, wire.SystemError},
	{errReservedTopic, wire.SystemError},
	{errGroupDisabled, wire.NoPermission},

	{engine.ErrTopicNotFound, wire.TopicNotExist},
	{engine.ErrGroupNotFound, wire.SubscriptionGroupNotExist},
	{engine.ErrNoOffset, wire.QueryNotFound},
	{engine.ErrMessageNotFound, wire.QueryNotFound},
	{engine.ErrTransactionNotFound, wire.TransactionFailed},
	{engine.ErrTransactionResolved, wire.TransactionFailed},
	{engine.ErrTransactionGroup, wire.TransactionStateGroupWrong},

	{engine.ErrReservedName, wire.NoPermission},
	{engine.ErrNoPermission, wire.NoPermission},
	{engine.ErrRejected, wire.NoPermission},
	{hook.ErrUnauthenticated, wire.NoPermission},
	{hook.ErrDenied, wire.NoPermission},
	{engine.ErrHookFailed, wire.SystemError},

	{engine.ErrEmptyBody, wire.MessageIllegal},
	{engine.ErrMessageTooLarge, wire.MessageIllegal},
	{engine.ErrInvalidMessage, wire.MessageIllegal},
	{engine.ErrBatchMixedTargets, wire.MessageIllegal},
	{engine.ErrMessageTypeMismatch, wire.MessageIllegal},
	{errTransactionalBatch, wire.MessageIllegal},

	{engine.ErrInvalidTopic, wire.InvalidParameter},
	{engine.ErrInvalidGroup, wire.InvalidParameter},
	{engine.ErrInvalidQueue, wire.InvalidParameter},
	{engine.ErrOffsetOutOfRange, wire.InvalidParameter},
	{engine.ErrInvalidArgument, wire.InvalidParameter},
	{message.ErrInvalidName, wire.InvalidParameter},
	{message.ErrBadMessageID, wire.InvalidParameter},
	{wire.ErrMissingField, wire.InvalidParameter},
	{wire.ErrInvalidField, wire.InvalidParameter},
	{wire.ErrMalformed, wire.InvalidParameter},
	{errInvalidRequest, wire.InvalidParameter},

	// ACL administration (auth_admin.go).
	{acl.ErrUserNotFound, wire.QueryNotFound},
	{acl.ErrNotReady, wire.ServiceNotAvailable},
	{acl.ErrInvalid, wire.InvalidParameter},
	{acl.ErrUserExists, wire.InvalidParameter},
	{acl.ErrLastSuper, wire.InvalidParameter},
}

// Errors of this package, each matched by the table above.
var (
	errNotSupported        = errors.New("broker: not supported")
	errSubscriptionMissing = errors.New("broker: the consumer's subscription does not exist")
	errSubscriptionParse   = errors.New("broker: cannot parse the subscription")
	errSubscriptionOld     = errors.New("broker: the subscription is not the latest")
	errNoConsumers         = errors.New("broker: no consumer for this group")
	errConsumerOffline     = errors.New("broker: consumer group not online")
	errClientOffline       = errors.New("broker: client not online")
	errProducerOffline     = errors.New("broker: producer group has no live producer")
	errReservedTopic       = errors.New("broker: topic is reserved for the broker")
	errGroupDisabled       = errors.New("broker: consumer group may not consume")
	errTransactionalBatch  = errors.New("broker: a batch cannot carry transactional messages")
	errInvalidRequest      = errors.New("broker: invalid request")
)

// codeOf returns the response code for err.
func codeOf(err error) wire.ResponseCode {
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return wire.SystemError
}

// errorResponse answers req with the code and remark of err.
func errorResponse(req *wire.Command, err error) *wire.Command {
	return wire.NewResponse(req, codeOf(err), err.Error())
}
