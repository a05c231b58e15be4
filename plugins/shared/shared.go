package shared

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the version of the plugin protocol (the Plugin
// service of proto/plugin.proto, package karman.plugin.v1). A broker
// refuses a plugin that speaks another version at the handshake.
const ProtocolVersion = 1

// Handshake is the handshake both sides check before anything else: a
// binary that is not a Karman plugin (no cookie) exits with a message
// instead of serving, and a broker refuses a plugin of another protocol
// version.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "KARMAN_PLUGIN",
	MagicCookieValue: "5c1f0b7e-karman-plugin",
}

// PluginName is the name of the one plugin of the plugin map: a plugin
// process serves the Plugin service, whose Configure says which kinds it
// implements.
const PluginName = "karman"

// Message is a message as plugins see it.
type Message struct {
	Topic string
	// Body is the message body; interceptors get it only when their
	// Configure asks for bodies (Settings.Bodies).
	Body       []byte
	Flag       int32
	Properties map[string]string

	// Set for stored messages (sinks, delivery interceptors).
	QueueID         int32
	QueueOffset     int64
	CommitLogOffset int64
	StoreTimestamp  int64 // ms since the epoch
	BornTimestamp   int64 // ms since the epoch
}

// Client is the client a batch is sent or delivered for, as the broker's
// front-end knows it.
type Client struct {
	Protocol string // "remoting", "grpc", "mqtt"; "" for an embedded engine
	ID       string
	Addr     string // host:port; "" when unknown
	Group    string
}

// StoreBatch is a send batch before it is stored.
type StoreBatch struct {
	Client Client
	Topic  string
	Queue  int32 // the queue asked for, -1 when the broker chooses
	// Messages: changes to their Properties are stored; changes to
	// anything else are ignored.
	Messages []Message
}

// DeliverBatch is a batch before it is delivered to a consumer group.
type DeliverBatch struct {
	Client   Client
	Topic    string
	Queue    int32
	Group    string
	Messages []Message

	dropped []uint32
}

// Drop drops Messages[i] from the delivery.
func (b *DeliverBatch) Drop(i int) { b.dropped = append(b.dropped, uint32(i)) }

// Dropped returns the indices dropped, in the order Drop was called.
func (b *DeliverBatch) Dropped() []uint32 { return b.dropped }

// StoreInterceptor sees send batches before they are stored.
type StoreInterceptor interface {
	BeforeStore(ctx context.Context, b *StoreBatch) error
}

// DeliverInterceptor sees batches before they are delivered.
type DeliverInterceptor interface {
	BeforeDeliver(ctx context.Context, b *DeliverBatch) error
}

// Sink receives the commit log's messages in order.
type Sink interface {
	// Write handles one batch; nil acknowledges it. An error makes the
	// broker hand the same batch again later.
	Write(ctx context.Context, msgs []Message) error
}

// Source produces messages for the broker to store.
type Source interface {
	// Read returns the next batch, at most max messages, each with its
	// Topic set. When nothing comes before ctx ends it returns no
	// messages and no error. Until Ack, the broker may call Read again
	// only after a restart of the plugin, which must then hand the
	// unacknowledged messages again.
	Read(ctx context.Context, max int) ([]Message, error)
	// Ack says the batch last read is stored.
	Ack(ctx context.Context) error
}

// Settings are what a plugin says about itself when configured.
type Settings struct {
	// Bodies makes the broker send message bodies to the interceptors
	// (they are left out otherwise, to keep calls cheap).
	Bodies bool
	// SinkTopics are the topics a sink gets; none means every topic but
	// the broker's own (system, retry and dead-letter topics).
	SinkTopics []string
}

// Configurer is implemented by plugins that take configuration.
type Configurer interface {
	Configure(ctx context.Context, name string, config map[string]string) (Settings, error)
}

// ErrRejected matches the error Reject returns.
var ErrRejected = errors.New("plugin: rejected")

// RejectError is an interceptor's rejection of a batch, with the reason
// the sender sees.
type RejectError struct{ Reason string }

func (e *RejectError) Error() string { return "rejected: " + e.Reason }

// Is makes the error match ErrRejected.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// Reject returns the error an interceptor returns to reject a batch.
func Reject(reason string) error { return &RejectError{Reason: reason} }
