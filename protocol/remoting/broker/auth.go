package broker

import (
	"context"
	"fmt"
	"strings"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Authentication and authorization.
//
// When the engine has an Authenticator or an Authorizer (engine.Hooks),
// every request the broker serves is checked before it runs: its
// credentials (the ACL extFields AccessKey, Signature and SecurityToken,
// and the content RocketMQ signs: rmqauth.RemotingContent) go to the
// Authenticators, which verify them, and each action the request takes
// on a resource (the table rules) goes to the Authorizers. A refusal is
// NO_PERMISSION with the reason as the remark. Every request is
// authenticated on its own, as RocketMQ's brokers do: its signature
// covers its own fields and body, so nothing can be cached per
// connection; an Authenticator that looks secrets up somewhere slow
// caches them itself.
//
// When the engine has any hook, the request's context carries a
// hook.Client (the client's id once it has sent a heartbeat on the
// connection, its address, the group the request acts for and its
// principal) for the engine's hooks. With no hook installed, Register
// routes the handlers unwrapped: nothing is paid.

// attrClientID is the connection attribute holding the client id the
// connection's heartbeats gave.
const attrClientID = "broker.clientID"

// access is one action a request takes on one resource.
type access struct {
	action hook.Action
	res    hook.Resource
}

// rule returns the actions req takes and the group it acts for.
type rule func(b *Broker, req *wire.Command, dst []access) ([]access, string, error)

// field returns the first non-empty extField of names.
func field(req *wire.Command, names ...string) string {
	for _, n := range names {
		if v := req.ExtField(n); v != "" {
			return v
		}
	}
	return ""
}

// onTopic is a rule for a request naming its topic in an extField.
func onTopic(a hook.Action, names ...string) rule {
	return func(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
		t := field(req, names...)
		if t == "" {
			return nil, "", fmt.Errorf("%w: %s names no topic", errInvalidRequest, req.RequestCode())
		}
		return append(dst, access{a, hook.Topic(t)}), "", nil
	}
}

// onGroup is a rule for a request naming its group in an extField, and
// perhaps a topic (optional) it acts on with the same action.
func onGroup(a hook.Action, groupField, topicField string) rule {
	return func(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
		g := field(req, groupField)
		if g == "" {
			return nil, "", fmt.Errorf("%w: %s names no group", errInvalidRequest, req.RequestCode())
		}
		acc := append(dst, access{a, hook.Group(g)})
		if topicField != "" {
			if t := field(req, topicField); t != "" {
				acc = append(acc, access{a, hook.Topic(t)})
			}
		}
		return acc, g, nil
	}
}

// optionalGroup is onGroup for a request whose group may be missing: it
// is then only authenticated.
func optionalGroup(a hook.Action, names ...string) rule {
	return func(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
		g := field(req, names...)
		if g == "" {
			return nil, "", nil
		}
		return append(dst, access{a, hook.Group(g)}), g, nil
	}
}

// onCluster is a rule for a request on the broker as a whole.
func onCluster(a hook.Action) rule {
	return func(b *Broker, _ *wire.Command, dst []access) ([]access, string, error) {
		return append(dst, access{a, hook.Cluster(b.opts.ClusterName)}), "", nil
	}
}

// sendRule: Pub on the topic; a send to a retry topic is a consumer's
// send-back, Sub on its group, as RocketMQ's ACL has it.
func sendRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	t := field(req, "topic", "b")
	if t == "" {
		return nil, "", fmt.Errorf("%w: %s names no topic", errInvalidRequest, req.RequestCode())
	}
	if g, ok := strings.CutPrefix(t, message.RetryTopicPrefix); ok {
		return append(dst, access{hook.ActionSub, hook.Group(g)}), g, nil
	}
	return append(dst, access{hook.ActionPub, hook.Topic(t)}), field(req, "producerGroup", "a"), nil
}

// pullRule: Sub on the topic and on the group.
func pullRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	t, g := field(req, "topic"), field(req, "consumerGroup")
	if t == "" || g == "" {
		return nil, "", fmt.Errorf("%w: %s needs topic and consumerGroup", errInvalidRequest, req.RequestCode())
	}
	return append(dst, access{hook.ActionSub, hook.Topic(t)}, access{hook.ActionSub, hook.Group(g)}), g, nil
}

// heartbeatRule: Sub on each consumer group of the heartbeat and on each
// topic it subscribes to (retry topics count as their group). Producer
// groups need nothing: their sends are checked.
func heartbeatRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	var hb wire.HeartbeatData
	if err := wire.DecodeJSONBody(req.Body, &hb); err != nil {
		return nil, "", fmt.Errorf("broker: %s: %w", req.RequestCode(), err)
	}
	acc := dst
	group := ""
	for _, c := range hb.ConsumerDataSet {
		acc = append(acc, access{hook.ActionSub, hook.Group(c.GroupName)})
		group = c.GroupName
		for _, s := range c.SubscriptionDataSet {
			if message.IsRetryTopic(s.Topic) {
				continue
			}
			acc = append(acc, access{hook.ActionSub, hook.Topic(s.Topic)})
		}
	}
	if group == "" && len(hb.ProducerDataSet) > 0 {
		group = hb.ProducerDataSet[0].GroupName
	}
	return acc, group, nil
}

// lockRule: Sub on the group of a lock or unlock.
func lockRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	var body wire.LockBatchRequestBody
	if err := decodeLockBody(req, &body); err != nil {
		return nil, "", err
	}
	return append(dst, access{hook.ActionSub, hook.Group(body.ConsumerGroup)}), body.ConsumerGroup, nil
}

// clientConfigRule: Sub on the group a client checks its subscription
// with.
func clientConfigRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	var body CheckClientRequestBody
	if err := wire.DecodeJSONBody(req.Body, &body); err != nil {
		return nil, "", fmt.Errorf("broker: %s: %w", req.RequestCode(), err)
	}
	acc := append(dst, access{hook.ActionSub, hook.Group(body.Group)})
	if t := body.SubscriptionData.Topic; t != "" {
		acc = append(acc, access{hook.ActionSub, hook.Topic(t)})
	}
	return acc, body.Group, nil
}

// createGroupRule: Create on the group a subscription-group config names.
func createGroupRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	var cfg struct {
		GroupName string `json:"groupName"`
	}
	if err := wire.DecodeJSONBody(req.Body, &cfg); err != nil {
		return nil, "", fmt.Errorf("broker: %s: %w", req.RequestCode(), err)
	}
	return append(dst, access{hook.ActionCreate, hook.Group(cfg.GroupName)}), cfg.GroupName, nil
}

// endTransactionRule: Pub on the producer group's behalf; the topic was
// checked when the half message was sent.
func endTransactionRule(_ *Broker, req *wire.Command, dst []access) ([]access, string, error) {
	g := field(req, "producerGroup")
	return append(dst, access{hook.ActionPub, hook.Group(g)}), g, nil
}

// rules maps every request code the broker serves to what it does.
// Register refuses to route a code without a rule when requests are
// guarded.
var rules = map[wire.RequestCode]rule{
	// Producers.
	wire.SendMessage:        sendRule,
	wire.SendMessageV2:      sendRule,
	wire.SendBatchMessage:   sendRule,
	wire.SendReplyMessage:   sendRule,
	wire.SendReplyMessageV2: sendRule,
	wire.EndTransaction:     endTransactionRule,

	// Consumers.
	wire.PullMessage:             pullRule,
	wire.LitePullMessage:         pullRule,
	wire.CheckClientConfig:       clientConfigRule,
	wire.HeartBeat:               heartbeatRule,
	wire.UnregisterClient:        optionalGroup(hook.ActionSub, "consumerGroup"),
	wire.GetConsumerListByGroup:  onGroup(hook.ActionSub, "consumerGroup", ""),
	wire.QueryConsumerOffset:     onGroup(hook.ActionSub, "consumerGroup", "topic"),
	wire.UpdateConsumerOffset:    onGroup(hook.ActionSub, "consumerGroup", "topic"),
	wire.GetMaxOffset:            onTopic(hook.ActionSub, "topic"),
	wire.GetMinOffset:            onTopic(hook.ActionSub, "topic"),
	wire.GetEarliestMsgStoretime: onTopic(hook.ActionSub, "topic"),
	wire.SearchOffsetByTimestamp: onTopic(hook.ActionSub, "topic"),
	wire.LockBatchMQ:             lockRule,
	wire.UnlockBatchMQ:           lockRule,
	wire.ConsumerSendMsgBack:     onGroup(hook.ActionSub, "group", ""),

	// Look-ups.
	wire.QueryMessage:           onTopic(hook.ActionSub, "topic"),
	wire.ViewMessageByID:        onCluster(hook.ActionGet), // the topic is known only once read
	wire.QueryTopicConsumeByWho: onTopic(hook.ActionGet, "topic"),
	wire.QueryTopicsByConsumer:  onGroup(hook.ActionGet, "group", ""),
	wire.GetBrokerRuntimeInfo:   onCluster(hook.ActionGet),
	wire.GetBrokerConfig:        onCluster(hook.ActionGet),
	wire.UpdateBrokerConfig:     onCluster(hook.ActionUpdate),

	// Administration.
	wire.UpdateAndCreateTopic:             onTopic(hook.ActionCreate, "topic"),
	wire.DeleteTopicInBroker:              onTopic(hook.ActionDelete, "topic"),
	wire.GetAllTopicConfig:                onCluster(hook.ActionList),
	wire.GetTopicConfig:                   onTopic(hook.ActionGet, "topic"),
	wire.UpdateAndCreateSubscriptionGroup: createGroupRule,
	wire.GetAllSubscriptionGroupConfig:    onCluster(hook.ActionList),
	wire.GetSubscriptionGroupConfig:       onGroup(hook.ActionGet, "group", ""),
	wire.DeleteSubscriptionGroup:          onGroup(hook.ActionDelete, "groupName", ""),
	wire.GetConsumerConnectionList:        onGroup(hook.ActionGet, "consumerGroup", ""),
	wire.GetProducerConnectionList:        onGroup(hook.ActionGet, "producerGroup", ""),
	wire.GetConsumeStats:                  onGroup(hook.ActionGet, "consumerGroup", "topic"),
	wire.GetTopicStatsInfo:                onTopic(hook.ActionGet, "topic"),
	wire.InvokeBrokerToResetOffset:        onGroup(hook.ActionUpdate, "group", "topic"),
	wire.GetConsumerRunningInfo:           onGroup(hook.ActionGet, "consumerGroup", ""),
	wire.ConsumeMessageDirectly:           onGroup(hook.ActionUpdate, "consumerGroup", "topic"),
	wire.KarmanResendDeadLetter:           onGroup(hook.ActionUpdate, "group", ""),

	// ACL administration (auth_admin.go), as RocketMQ's ACL has it.
	wire.AuthCreateUser: onCluster(hook.ActionUpdate),
	wire.AuthUpdateUser: onCluster(hook.ActionUpdate),
	wire.AuthDeleteUser: onCluster(hook.ActionUpdate),
	wire.AuthGetUser:    onCluster(hook.ActionGet),
	wire.AuthListUser:   onCluster(hook.ActionGet),
	wire.AuthCreateACL:  onCluster(hook.ActionUpdate),
	wire.AuthUpdateACL:  onCluster(hook.ActionUpdate),
	wire.AuthDeleteACL:  onCluster(hook.ActionUpdate),
	wire.AuthGetACL:     onCluster(hook.ActionGet),
	wire.AuthListACL:    onCluster(hook.ActionGet),
}

// handle routes f for code on mux, inline or not, guarded when the
// engine has hooks. A request that would call a hook that may wait
// (hook.Waiting: a process plugin) is not run inline, so that the
// connection's other requests go on meanwhile.
func (b *Broker) handle(mux *server.Mux, code wire.RequestCode, kind server.Kind, inline bool, f server.HandlerFunc) {
	f = b.guard(code, f)
	if inline && b.hooksMayWait(kind) {
		inline = false
	}
	if inline {
		mux.HandleInlineFunc(code, kind, f)
	} else {
		mux.HandleFunc(code, kind, f)
	}
}

// hooksMayWait reports whether a request of kind may call a hook that
// may wait: any guarded request when an authentication hook may, sends
// when a store hook may, pulls when a delivery hook may.
func (b *Broker) hooksMayWait(kind server.Kind) bool {
	set := b.eng.Hooks()
	switch {
	case set.GuardMayWait():
		return true
	case kind == server.KindSend:
		return set.StoreMayWait()
	case kind == server.KindPull:
		return set.DeliverMayWait()
	}
	return false
}

// guardState is what guard needs per request, in one allocation: the
// context carrying the hook.Client, and room for the accesses of a send
// or a pull.
type guardState struct {
	hook.ClientContext
	acc [2]access
}

// guard wraps f with authentication, authorization and the hook.Client,
// or returns f itself when the engine has no hook.
func (b *Broker) guard(code wire.RequestCode, f server.HandlerFunc) server.HandlerFunc {
	set := b.eng.Hooks()
	if set.Empty() {
		return f
	}
	r, ok := rules[code]
	if !ok {
		panic(fmt.Sprintf("broker: request code %s has no authorization rule", code))
	}
	guarded, fields := set.Guarded(), set.NeedsFields()
	return func(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
		addr := bornHost(c)
		st := &guardState{}
		st.Context, st.Client = ctx, hook.Client{Protocol: Protocol, Addr: addr}
		cl := &st.Client
		if id, ok := c.Get(attrClientID); ok {
			cl.ID, _ = id.(string)
		}
		ctx = &st.ClientContext // Authorizers read the client's address from it
		if guarded {
			acc, group, err := r(b, req, st.acc[:0])
			if err != nil {
				return errorResponse(req, err)
			}
			cl.Group = group
			cr := auth.Credentials(req, addr, fields)
			p, err := set.Authenticate(ctx, cr)
			auth.Release(cr)
			if err != nil {
				return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
			}
			cl.Principal = p
			for _, a := range acc {
				if err := set.Authorize(ctx, p, a.action, a.res); err != nil {
					return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
				}
			}
		}
		return f(ctx, c, req)
	}
}

// clientGroup sets the group of the request's hook.Client, when it
// carries one without a group (no Authorizer named it).
func clientGroup(ctx context.Context, group string) {
	if cl, ok := hook.FromContext(ctx); ok && cl.Group == "" {
		cl.Group = group
	}
}
