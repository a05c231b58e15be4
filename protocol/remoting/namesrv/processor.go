package namesrv

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// OrderTopicConfigNamespace is the KV namespace of order-topic settings:
// topic → "brokerName:queues;brokerName:queues".
const OrderTopicConfigNamespace = "ORDER_TOPIC_CONFIG"

// ExtCompleteTopics is an extFields key of REGISTER_BROKER that Karman
// brokers add with the value "true": the body lists every topic of the
// broker, so topics missing from it are dropped. Without it a
// registration only adds and updates topics, which is what Java brokers
// expect (they also send registrations that carry only a new topic).
// Java name servers ignore the key.
const ExtCompleteTopics = "karmanCompleteTopics"

// Registration is a REGISTER_BROKER request as the route table sees it.
type Registration struct {
	Cluster            string
	BrokerName         string
	BrokerID           int64 // 0 = master
	Addr               string
	HAAddr             string
	ZoneName           string
	EnableActingMaster bool
	// Timeout is how long the broker may stay silent; 0 means the
	// table's default.
	Timeout     time.Duration
	DataVersion DataVersion
	Topics      []TopicConfig // sorted by name
	// Partial: Topics only adds and updates; other topics of the broker
	// stay. Otherwise Topics is the broker's complete topic set.
	Partial bool
}

// RegisterResult tells a replica where its master is.
type RegisterResult struct {
	MasterAddr   string
	MasterHAAddr string
}

// Routes is the route table the processors read and update. Every method
// must be safe for concurrent use.
type Routes interface {
	// Register records a broker registration. An error is answered with
	// SYSTEM_ERROR and its text.
	Register(r Registration) (RegisterResult, error)
	// Unregister removes the broker member at addr.
	Unregister(cluster, brokerName, addr string, brokerID int64) bool
	// Route returns the queue and broker data of topic, sorted by broker
	// name, or false when no broker serves it. The processor fills in
	// OrderTopicConf and FilterServerTable.
	Route(topic string) (wire.TopicRouteData, bool)
	// ClusterInfo returns every broker group and cluster.
	ClusterInfo() ClusterInfo
	// Topics returns every routable topic, sorted.
	Topics() []string
	// TopicsByCluster returns the topics some broker of cluster serves.
	TopicsByCluster(cluster string) []string
	// DeleteTopic forgets topic: everywhere when cluster is empty, else
	// only its queues on the brokers of cluster.
	DeleteTopic(topic, cluster string) bool
	// WipeWritePerm takes the write permission of broker group
	// brokerName away in every topic, and AddWritePerm gives it back;
	// both return the number of topics changed.
	WipeWritePerm(brokerName string) int
	AddWritePerm(brokerName string) int
}

// KVConfig is the name server's configuration store. Every method must be
// safe for concurrent use.
type KVConfig interface {
	Put(namespace, key, value string)
	Get(namespace, key string) (string, bool)
	Delete(namespace, key string) bool
	// List returns a namespace's keys, or false when it has none.
	List(namespace string) (map[string]string, bool)
}

// Options configure a Processor. The zero value works.
type Options struct {
	// Logger receives broker registration events. Default discards.
	Logger *slog.Logger
	// OrderTopicConf makes route answers carry the topic's entry of the
	// KV namespace ORDER_TOPIC_CONFIG as orderTopicConf (Java's
	// orderMessageEnable, off by default).
	OrderTopicConf bool
	// Hooks, when it holds an Authenticator or an Authorizer, guards the
	// administration requests (delete topic, put and delete KV config,
	// wipe and add write permission): each is authenticated and
	// authorized as an administration action on the cluster, and refused
	// with NO_PERMISSION. Route queries and broker registration stay
	// open. The name-server module passes the engine's set
	// (engine.Engine.Hooks). Nil guards nothing.
	Hooks *hook.Set
}

// memberKey identifies a registered broker member.
type memberKey struct{ cluster, addr string }

type member struct {
	brokerName string
	brokerID   int64
	conn       uint64
}

// Processor answers name-server requests from a Routes table and a
// KVConfig store. It is safe for concurrent use.
type Processor struct {
	routes Routes
	kv     KVConfig
	opts   Options

	mu      sync.Mutex
	members map[memberKey]member // who registered on which connection
}

// New returns a Processor serving routes and kv.
func New(routes Routes, kv KVConfig, opts Options) *Processor {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Processor{routes: routes, kv: kv, opts: opts, members: map[memberKey]member{}}
}

// Mount registers the processor's handlers on mux, all of kind
// server.KindNamesrv.
func (p *Processor) Mount(mux *server.Mux) {
	for code, h := range map[wire.RequestCode]server.HandlerFunc{
		wire.GetRouteInfoByTopic:           p.getRouteInfo,
		wire.RegisterBroker:                p.registerBroker,
		wire.UnregisterBroker:              p.unregisterBroker,
		wire.GetBrokerClusterInfo:          p.getClusterInfo,
		wire.GetTopicsByCluster:            p.getTopicsByCluster,
		wire.GetAllTopicListFromNameServer: p.getAllTopicList,
		wire.DeleteTopicInNamesrv:          p.deleteTopic,
		wire.PutKVConfig:                   p.putKV,
		wire.GetKVConfig:                   p.getKV,
		wire.DeleteKVConfig:                p.deleteKV,
		wire.GetKVListByNamespace:          p.getKVList,
		wire.GetSystemTopicListFromNS:      p.getSystemTopicList,
		wire.WipeWritePermOfBroker:         p.wipeWritePerm,
		wire.AddWritePermOfBroker:          p.addWritePerm,
	} {
		mux.HandleFunc(code, server.KindNamesrv, p.guard(code, h))
	}
}

// ConnClosed unregisters the brokers that registered over c, as a Java
// name server does when a broker's channel closes. Pass it as
// server.Options.OnClose (or call it from there).
func (p *Processor) ConnClosed(c *server.Conn) {
	var gone []memberKey
	var who []member
	p.mu.Lock()
	for k, m := range p.members {
		if m.conn == c.ID() {
			gone = append(gone, k)
			who = append(who, m)
			delete(p.members, k)
		}
	}
	p.mu.Unlock()
	for i, k := range gone {
		if p.routes.Unregister(k.cluster, who[i].brokerName, k.addr, who[i].brokerID) {
			p.opts.Logger.Info("broker connection closed; unregistered", "cluster", k.cluster, "broker", who[i].brokerName, "id", who[i].brokerID, "addr", k.addr)
		}
	}
}

// errorResponse answers req with code and a remark.
func errorResponse(req *wire.Command, code wire.ResponseCode, format string, args ...any) *wire.Command {
	return wire.NewResponse(req, code, fmt.Sprintf(format, args...))
}

// badRequest answers a request whose header or body could not be decoded.
func badRequest(req *wire.Command, err error) *wire.Command {
	return errorResponse(req, wire.InvalidParameter, "%v", err)
}

// jsonResponse answers SUCCESS with v as the JSON body.
func jsonResponse(req *wire.Command, v any) *wire.Command {
	body, err := wire.EncodeJSONBody(v)
	if err != nil {
		return errorResponse(req, wire.SystemError, "%v", err)
	}
	resp := wire.NewResponse(req, wire.Success, "")
	resp.Body = body
	return resp
}
