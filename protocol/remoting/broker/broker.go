package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Defaults of Options.
const (
	DefaultBrokerName      = "broker-a"
	DefaultClusterName     = "DefaultCluster"
	DefaultRegion          = "DefaultRegion"
	DefaultMaxSuspend      = 20 * time.Second
	DefaultBusyDispatchLag = 256 << 20
	DefaultBusyCheck       = 100 * time.Millisecond
	// DefaultClientCallTimeout is Java's timeout for requests passed on to
	// a client.
	DefaultClientCallTimeout = 10 * time.Second
)

// Protocol is the name this front-end gives the engine's client registry
// (registry.Heartbeat.Protocol) and its transaction checker.
const Protocol = auth.Protocol

// Options configure a Broker. The zero value works; every field states its
// default.
type Options struct {
	// BrokerName is the name clients see in routes and send back in the
	// bname header field. Default DefaultBrokerName.
	BrokerName string
	// ClusterName is written into every stored message as the CLUSTER
	// property (request/reply clients need it). Default DefaultClusterName.
	ClusterName string
	// Addr is the address clients reach the broker at, "ip:port". It is
	// the store host of replies pushed to requesters. Optional.
	Addr string
	// Region is returned as MSG_REGION in send responses. Default
	// DefaultRegion.
	Region string
	// AutoCreateTopics creates a topic unknown to the engine on its first
	// send with the queue count the producer assumed (the request's
	// defaultTopicQueueNums, capped by TBW102's), as Java brokers do, so
	// that the producer's route does not change when the topic appears.
	// Keep it equal to the engine's option of the same name. Default
	// false: unknown topics are left to the engine.
	AutoCreateTopics bool
	// AutoCreateGroups creates a consumer group when a client first
	// heartbeats as one of its consumers, sends to its retry topic or
	// sends a message back. Keep it equal to the engine's option of the
	// same name. Default false.
	AutoCreateGroups bool
	// MaxSuspend caps how long a pull waits for messages (long polling),
	// whatever the client asks. It must stay below the clients' pull
	// timeout (30 s). Default DefaultMaxSuspend (20 s).
	MaxSuspend time.Duration
	// BusyDispatchLag answers sends with SYSTEM_BUSY while the engine's
	// dispatcher is more than this many bytes behind the end of the commit
	// log (see Busy). Default DefaultBusyDispatchLag; negative disables flow
	// control.
	BusyDispatchLag int64
	// BusyCheck is how often the dispatch lag is sampled. Default
	// DefaultBusyCheck.
	BusyCheck time.Duration
	// ClientCallTimeout bounds how long the broker waits for a consumer's
	// answer to a request it passes on for an administration tool
	// (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY). Default
	// DefaultClientCallTimeout (10 s, as Java).
	ClientCallTimeout time.Duration
	// RuntimeInfo, when set, adds figures to the GET_BROKER_RUNTIME_INFO
	// table (a replicated broker's role, epoch and lag); they never
	// replace the broker's own. Called for each request.
	RuntimeInfo func() map[string]string
	// Logger receives the broker's log records (never one per message).
	// Default discards.
	Logger *slog.Logger
}

func (o *Options) ensureDefaults() {
	if o.BrokerName == "" {
		o.BrokerName = DefaultBrokerName
	}
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.MaxSuspend <= 0 {
		o.MaxSuspend = DefaultMaxSuspend
	}
	if o.BusyDispatchLag == 0 {
		o.BusyDispatchLag = DefaultBusyDispatchLag
	}
	if o.BusyCheck <= 0 {
		o.BusyCheck = DefaultBusyCheck
	}
	if o.ClientCallTimeout <= 0 {
		o.ClientCallTimeout = DefaultClientCallTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Broker serves the broker requests of RocketMQ remoting clients from an
// engine. It keeps no state of its own beyond caches: topics, groups,
// offsets, clients and locks live in the engine.
type Broker struct {
	eng    *engine.Engine
	opts   Options
	hooked bool // the engine has hooks: requests carry a hook.Client

	busy atomic.Bool // the engine's dispatcher is too far behind
	// maxSuspend is Options.MaxSuspend in nanoseconds, changed at run time
	// by UPDATE_BROKER_CONFIG (suspendMaxTimeMills).
	maxSuspend atomic.Int64
	traffic    traffic      // message counters sampled for GET_BROKER_RUNTIME_INFO
	held       atomic.Int64 // pulls waiting for messages

	testHookHold atomic.Pointer[func()] // called when a pull starts waiting; tests only

	// known holds the names of the topics the broker has seen, so that a
	// send to a topic the engine just auto-created triggers a new
	// registration with the name servers.
	known         sync.Map // topic name → struct{}
	topicsChanged chan struct{}

	ctx     context.Context // done when the broker closes
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool
	closed  atomic.Bool
}

// New returns a Broker serving from eng. Call Register to route its
// requests, then Start.
func New(eng *engine.Engine, opts Options) *Broker {
	opts.ensureDefaults()
	b := &Broker{
		eng:           eng,
		opts:          opts,
		topicsChanged: make(chan struct{}, 1),
		hooked:        !eng.Hooks().Empty(),
	}
	b.maxSuspend.Store(int64(opts.MaxSuspend))
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// Register routes every request the broker serves on mux. When the
// engine has hooks (engine.Engine.Hooks), each request is authenticated
// and authorized first and carries a hook.Client (see auth.go).
func (b *Broker) Register(mux *server.Mux) {
	// Producers.
	b.handle(mux, wire.SendMessage, server.KindSend, true, b.sendMessage)
	b.handle(mux, wire.SendMessageV2, server.KindSend, true, b.sendMessage)
	b.handle(mux, wire.SendBatchMessage, server.KindSend, true, b.sendMessage)
	b.handle(mux, wire.SendReplyMessage, server.KindSend, false, b.sendReplyMessage)
	b.handle(mux, wire.SendReplyMessageV2, server.KindSend, false, b.sendReplyMessage)
	b.handle(mux, wire.EndTransaction, server.KindSend, false, b.endTransaction)

	// Consumers.
	b.handle(mux, wire.PullMessage, server.KindPull, true, b.pullMessage)
	b.handle(mux, wire.LitePullMessage, server.KindPull, true, b.pullMessage)
	b.handle(mux, wire.CheckClientConfig, server.KindConsume, false, b.checkClientConfig)
	b.handle(mux, wire.HeartBeat, server.KindConsume, false, b.heartbeat)
	b.handle(mux, wire.UnregisterClient, server.KindConsume, false, b.unregisterClient)
	b.handle(mux, wire.GetConsumerListByGroup, server.KindConsume, false, b.getConsumerListByGroup)
	b.handle(mux, wire.QueryConsumerOffset, server.KindConsume, false, b.queryConsumerOffset)
	b.handle(mux, wire.UpdateConsumerOffset, server.KindConsume, false, b.updateConsumerOffset)
	b.handle(mux, wire.GetMaxOffset, server.KindConsume, false, b.getMaxOffset)
	b.handle(mux, wire.GetMinOffset, server.KindConsume, false, b.getMinOffset)
	b.handle(mux, wire.GetEarliestMsgStoretime, server.KindConsume, false, b.getEarliestMsgStoretime)
	b.handle(mux, wire.QueryTopicConsumeByWho, server.KindDefault, false, b.queryTopicConsumeByWho)
	b.handle(mux, wire.GetBrokerRuntimeInfo, server.KindDefault, false, b.getBrokerRuntimeInfo)
	b.handle(mux, wire.GetBrokerConfig, server.KindDefault, false, b.getBrokerConfig)
	b.handle(mux, wire.UpdateBrokerConfig, server.KindDefault, false, b.updateBrokerConfig)
	b.handle(mux, wire.QueryTopicsByConsumer, server.KindDefault, false, b.queryTopicsByConsumer)
	b.handle(mux, wire.SearchOffsetByTimestamp, server.KindConsume, false, b.searchOffsetByTimestamp)
	b.handle(mux, wire.LockBatchMQ, server.KindConsume, false, b.lockBatchMQ)
	b.handle(mux, wire.UnlockBatchMQ, server.KindConsume, false, b.unlockBatchMQ)
	b.handle(mux, wire.ConsumerSendMsgBack, server.KindConsume, false, b.consumerSendMsgBack)

	// Look-ups.
	b.handle(mux, wire.QueryMessage, server.KindDefault, false, b.queryMessage)
	b.handle(mux, wire.ViewMessageByID, server.KindDefault, false, b.viewMessageByID)

	// Administration.
	b.handle(mux, wire.UpdateAndCreateTopic, server.KindDefault, false, b.updateAndCreateTopic)
	b.handle(mux, wire.DeleteTopicInBroker, server.KindDefault, false, b.deleteTopicInBroker)
	b.handle(mux, wire.GetAllTopicConfig, server.KindDefault, false, b.getAllTopicConfig)
	b.handle(mux, wire.GetTopicConfig, server.KindDefault, false, b.getTopicConfig)
	b.handle(mux, wire.UpdateAndCreateSubscriptionGroup, server.KindDefault, false, b.updateAndCreateSubscriptionGroup)
	b.handle(mux, wire.GetAllSubscriptionGroupConfig, server.KindDefault, false, b.getAllSubscriptionGroupConfig)
	b.handle(mux, wire.GetSubscriptionGroupConfig, server.KindDefault, false, b.getSubscriptionGroupConfig)
	b.handle(mux, wire.DeleteSubscriptionGroup, server.KindDefault, false, b.deleteSubscriptionGroup)
	b.handle(mux, wire.GetConsumerConnectionList, server.KindDefault, false, b.getConsumerConnectionList)
	b.handle(mux, wire.GetProducerConnectionList, server.KindDefault, false, b.getProducerConnectionList)
	b.handle(mux, wire.GetConsumeStats, server.KindDefault, false, b.getConsumeStats)
	b.handle(mux, wire.GetTopicStatsInfo, server.KindDefault, false, b.getTopicStatsInfo)
	b.handle(mux, wire.InvokeBrokerToResetOffset, server.KindDefault, false, b.invokeBrokerToResetOffset)
	b.handle(mux, wire.GetConsumerRunningInfo, server.KindDefault, false, b.getConsumerRunningInfo)
	b.handle(mux, wire.ConsumeMessageDirectly, server.KindDefault, false, b.consumeMessageDirectly)
	b.handle(mux, wire.KarmanResendDeadLetter, server.KindDefault, false, b.resendDeadLetter)

	// ACL administration.
	b.registerAuthAdmin(mux)
}

// Start creates the topics the broker needs (the auto-create template
// TBW102, when Options.AutoCreateTopics is on, and the trace topic
// RMQ_SYS_TRACE_TOPIC) and starts the background
// work: notifying consumers of group
// changes and offset resets, transaction checks, and flow control. It
// returns once that is running; ctx only bounds the start itself.
func (b *Broker) Start(ctx context.Context) error {
	if b.closed.Load() {
		return fmt.Errorf("broker: start after close")
	}
	if !b.started.CompareAndSwap(false, true) {
		return fmt.Errorf("broker: started twice")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.opts.AutoCreateTopics {
		if err := b.ensureTopic(templateTopic()); err != nil {
			return fmt.Errorf("broker: create %s: %w", message.TopicAutoCreate, err)
		}
	}
	if err := b.ensureTopic(traceTopic()); err != nil {
		return fmt.Errorf("broker: create %s: %w", message.TopicTrace, err)
	}
	for _, t := range b.eng.Topics() {
		b.known.Store(t.Name, struct{}{})
	}
	b.eng.SetTransactionChecker(Protocol, b.checkTransaction)

	changes := b.eng.Clients().Watch(b.ctx)
	events := b.eng.Subscribe(b.ctx)
	b.sampleBusy()
	b.traffic.boot = time.Now()
	b.traffic.add(b.trafficNow())
	b.wg.Add(4)
	go func() { defer b.wg.Done(); b.notifyLoop(changes) }()
	go func() { defer b.wg.Done(); b.eventLoop(events) }()
	go func() { defer b.wg.Done(); b.busyLoop() }()
	go func() { defer b.wg.Done(); b.trafficLoop() }()
	return nil
}

// Close stops the background work and makes long polls in progress
// return. It does not close connections: shut the server down for that.
func (b *Broker) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.cancel()
	b.wg.Wait()
	return nil
}

// Options returns the broker's options, defaults applied.
func (b *Broker) Options() Options { return b.opts }

// HeldPulls returns how many pulls are waiting for messages.
func (b *Broker) HeldPulls() int64 { return b.held.Load() }

// OnClose is meant for server.Options.OnClose: it forgets the clients
// that were connected through c, so their consumer groups rebalance.
func (b *Broker) OnClose(c *server.Conn) {
	b.eng.Clients().Disconnect(c)
}

// templateTopic is TBW102, the topic producers fall back to when their
// topic has no route yet. Its INHERIT permission tells them (and Java
// brokers) that topics may be created from it.
func templateTopic() meta.Topic {
	return meta.Topic{
		Name:        message.TopicAutoCreate,
		ReadQueues:  engine.DefaultQueueCount,
		WriteQueues: engine.DefaultQueueCount,
		Perm:        meta.PermRW | meta.PermInherit,
		System:      true,
	}
}

// ensureTopic creates t unless a topic of its name exists.
func (b *Broker) ensureTopic(t meta.Topic) error {
	if _, err := b.eng.Topic(t.Name); err == nil {
		return nil
	} else if !errors.Is(err, engine.ErrTopicNotFound) {
		return err
	}
	_, created, err := b.eng.EnsureTopic(t)
	if err != nil {
		return err
	}
	if created {
		b.noteTopic(t.Name)
	}
	return nil
}

// traceTopic is RMQ_SYS_TRACE_TOPIC, where clients with message tracing
// on send their traces, with one queue, as Java brokers create it when
// traceTopicEnable is set. Clients cannot create it: the Go client sends
// traces only to a topic that has a route, and the broker refuses to
// create system topics on request.
func traceTopic() meta.Topic {
	return meta.Topic{Name: message.TopicTrace, ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW, System: true}
}

// systemTopic is the configuration of a retry or dead-letter topic: one
// queue, readable and writable, as the engine creates them itself.
func systemTopic(name string) meta.Topic {
	return meta.Topic{Name: name, ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW, System: true}
}

// group returns a consumer group's configuration, creating the group
// when AutoCreateGroups allows, and the tools group (message.GroupTools)
// always, as Java brokers keep it.
func (b *Broker) group(ctx context.Context, name string) (meta.Group, error) {
	g, err := b.eng.Group(name)
	if err == nil || !errors.Is(err, engine.ErrGroupNotFound) || !(b.opts.AutoCreateGroups || name == message.GroupTools) {
		return g, err
	}
	server.Detach(ctx) // creating a group writes to disk
	g, _, err = b.eng.EnsureGroup(meta.Group{Name: name})
	return g, err
}

// bornHost returns the client's address as a message's born host.
func bornHost(c *server.Conn) netip.AddrPort { return auth.Addr(c) }

// decodeHeader decodes req's extFields into h, wrapping the error so that
// it names the request.
func decodeHeader(req *wire.Command, h wire.Header) error {
	if err := req.DecodeHeader(h); err != nil {
		return fmt.Errorf("broker: %s: %w", req.RequestCode(), err)
	}
	return nil
}

// success returns an empty SUCCESS response to req.
func success(req *wire.Command) *wire.Command { return wire.NewResponse(req, wire.Success, "") }
