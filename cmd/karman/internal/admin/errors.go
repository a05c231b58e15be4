package admin

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Sentinel errors. Errors returned by a Client match them under errors.Is
// when they apply.
var (
	// ErrTopicNotFound: no name server routes the topic, or no broker
	// has it.
	ErrTopicNotFound = errors.New("admin: topic not found")
	// ErrTopicExists: topic create found the topic already routed.
	ErrTopicExists = errors.New("admin: topic already exists")
	// ErrGroupNotFound: no broker knows the consumer group.
	ErrGroupNotFound = errors.New("admin: consumer group not found")
	// ErrGroupExists: group create found the group on a broker.
	ErrGroupExists = errors.New("admin: consumer group already exists")
	// ErrConsumerOffline: no consumer of the group (or not the one asked
	// for) is connected to any broker.
	ErrConsumerOffline = errors.New("admin: consumer not online")
	// ErrMessageNotFound: no broker has the message.
	ErrMessageNotFound = errors.New("admin: message not found")
	// ErrNoBroker: the name servers list no broker master (in the cluster
	// asked for).
	ErrNoBroker = errors.New("admin: no broker")
	// ErrUnreachable: a name server or broker could not be reached or
	// did not answer in time.
	ErrUnreachable = errors.New("admin: unreachable")
	// ErrInvalidArgument: an argument was rejected before anything was
	// sent.
	ErrInvalidArgument = errors.New("admin: invalid argument")
)

// ResponseError is a response whose code is not SUCCESS.
type ResponseError struct {
	// Target says who answered: "name server ip:port" or
	// "broker NAME (ip:port)".
	Target  string
	Request wire.RequestCode
	Code    wire.ResponseCode
	Remark  string
}

func (e *ResponseError) Error() string {
	s := fmt.Sprintf("%s answered %s with %s (%d)", e.Target, e.Request, e.Code, int32(e.Code))
	if e.Remark != "" {
		s += ": " + e.Remark
	}
	return s
}

// Is makes a ResponseError match the sentinel its code stands for.
func (e *ResponseError) Is(target error) bool {
	switch target {
	case ErrTopicNotFound:
		return e.Code == wire.TopicNotExist
	case ErrGroupNotFound:
		return e.Code == wire.SubscriptionGroupNotExist
	case ErrMessageNotFound:
		return e.Code == wire.QueryNotFound
	}
	return false
}

// HasCode reports whether err is (or wraps) a ResponseError with one of
// the codes.
func HasCode(err error, codes ...wire.ResponseCode) bool {
	var re *ResponseError
	if !errors.As(err, &re) {
		return false
	}
	for _, c := range codes {
		if re.Code == c {
			return true
		}
	}
	return false
}

// transportError is a failure to reach a peer or to get its answer. Its
// message is written for people; it wraps ErrUnreachable and the cause.
type transportError struct {
	msg   string
	cause error
}

func (e *transportError) Error() string { return e.msg }

func (e *transportError) Unwrap() []error { return []error{ErrUnreachable, e.cause} }

// dialFailed describes a failed dial to t.
func dialFailed(t target, err error) error {
	return &transportError{msg: "cannot reach " + t.String() + ": " + causeText(err), cause: err}
}

// requestFailed describes a request to t that got no answer.
func requestFailed(t target, code wire.RequestCode, err error) error {
	var msg string
	switch {
	case errors.Is(err, peer.ErrTimeout):
		msg = fmt.Sprintf("%s did not answer %s in time", t, code)
	case errors.Is(err, peer.ErrConnectionLost):
		msg = fmt.Sprintf("lost the connection to %s during %s: %s", t, code, causeText(err))
	default:
		msg = fmt.Sprintf("%s to %s: %s", code, t, causeText(err))
	}
	return &transportError{msg: msg, cause: err}
}

// causeText returns the most telling text of a network error: the
// innermost *net.OpError ("dial tcp 1.2.3.4:9876: connect: connection
// refused") when there is one, else the error without the peer package's
// prefixes.
func causeText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	s := err.Error()
	for {
		t, ok := strings.CutPrefix(s, "peer: ")
		if !ok {
			return s
		}
		s = t
	}
}

// kindError is an error written for people that matches a sentinel
// (its kind) and whatever its message wraps.
type kindError struct {
	kind  error
	cause error
}

func (e *kindError) Error() string { return e.cause.Error() }

func (e *kindError) Unwrap() []error { return []error{e.kind, e.cause} }

// errorf formats an error as fmt.Errorf does (so %w wraps) that also
// matches kind.
func errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, cause: fmt.Errorf(format, args...)}
}

func invalidf(format string, args ...any) error { return errorf(ErrInvalidArgument, format, args...) }

// invalidName describes a topic or group name the message package
// refused, without its package prefix.
func invalidName(err error) error {
	return invalidf("%v", strings.TrimPrefix(err.Error(), "message: "))
}
