package hook

import (
	"context"
	"errors"
	"net/netip"

	"github.com/karmanmq/karman/engine/message"
)

// BeforeStore is called before a batch of messages is stored.
type BeforeStore interface {
	// BeforeStore may change the properties of b.Messages or reject the
	// batch with Reject.
	BeforeStore(ctx context.Context, b *StoreBatch) error
}

// BeforeDeliver is called before a batch of messages is handed to a
// consumer group.
type BeforeDeliver interface {
	// BeforeDeliver may drop messages of b (DeliverBatch.Drop) or reject
	// the delivery with Reject.
	BeforeDeliver(ctx context.Context, b *DeliverBatch) error
}

// StoreBatch is what a send is about to store.
type StoreBatch struct {
	// Client is the sender, as the context carries it (zero when it
	// carries none).
	Client Client
	// Topic is the topic every message of the batch is sent to.
	Topic string
	// Queue is the queue asked for, or -1 when the engine chooses.
	Queue int32
	// Messages are copies of the messages: changes to their properties
	// are stored, changes to other fields are not. Their properties may
	// be held encoded as the client sent them (Properties nil,
	// EncodedProperties set) until a hook needs them: read them with
	// Property or LookupProperty, change them with SetProperty or
	// ClearProperty, or call LoadProperties before using the Properties
	// map; EncodedProperties is not to be modified. Properties no hook
	// loads are stored as they came, without decoding. Their Body is the
	// sender's and must not be modified.
	Messages []*message.Message
}

// DeliverBatch is what a pull or pop is about to hand to a consumer.
type DeliverBatch struct {
	// Client is the consumer, as the context carries it.
	Client Client
	// Topic is the topic (or light queue) the messages are read from.
	Topic string
	// Queue is their queue.
	Queue int32
	// Group is the consumer group they go to: a pop's group, a pull's
	// Client.Group ("" when the caller named none).
	Group string
	// Messages are the messages decoded, in queue order. They are a view:
	// changes to them are not delivered.
	Messages []*message.Message

	dropped []bool
}

// Drop drops Messages[i] from the delivery. Dropping twice is harmless.
func (b *DeliverBatch) Drop(i int) {
	if b.dropped == nil {
		b.dropped = make([]bool, len(b.Messages))
	}
	b.dropped[i] = true
}

// Dropped reports whether Messages[i] has been dropped.
func (b *DeliverBatch) Dropped(i int) bool {
	return b.dropped != nil && b.dropped[i]
}

// Client describes the client a call is made for. Front-ends fill what
// they know.
type Client struct {
	// Protocol is the front-end: "remoting", "grpc", "mqtt"; "" for a
	// program that embeds the engine.
	Protocol string
	// ID is the client's id as it gave it.
	ID string
	// Addr is the client's address; zero when it has none.
	Addr netip.AddrPort
	// Group is the producer or consumer group the client acts for; ""
	// when none.
	Group string
	// Principal is who the client is, as the Authenticators established
	// it; zero when none is installed.
	Principal Principal
}

type clientKey struct{}

// ClientContext is a context that carries a Client, as NewContext's
// does, in one allocation with it: a front-end that makes one of each
// per request embeds it in its own state. Set Context (the parent) and
// Client, then use its address as the context.
type ClientContext struct {
	context.Context
	Client Client
}

// Value returns &c.Client for the key FromContext asks for, and what
// the parent holds otherwise.
func (c *ClientContext) Value(key any) any {
	if _, ok := key.(clientKey); ok {
		return &c.Client
	}
	return c.Context.Value(key)
}

// NewContext returns a copy of ctx that carries c.
func NewContext(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// FromContext returns the client ctx carries, if any.
func FromContext(ctx context.Context) (*Client, bool) {
	c, ok := ctx.Value(clientKey{}).(*Client)
	return c, ok && c != nil
}

// ErrRejected matches the error of a batch a hook rejected.
var ErrRejected = errors.New("hook: rejected")

// RejectError is a hook's rejection with its reason. It matches
// ErrRejected.
type RejectError struct {
	Reason string
}

func (e *RejectError) Error() string { return "rejected: " + e.Reason }

// Is makes the error match ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// Reject returns the error a hook returns to reject a batch, saying why.
// The reason reaches the client.
func Reject(reason string) error { return &RejectError{Reason: reason} }
