package registry

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Registry is the broker's live view of its clients: producer and consumer
// groups, their subscriptions, and the queue locks of orderly consumers.
// The zero value is not usable; call New.
type Registry struct {
	opts Options

	mu        sync.RWMutex
	clients   map[ClientID]*client
	conns     map[Conn]map[ClientID]struct{} // clients reached through each connection
	consumers map[string]*consumerGroup
	producers map[string]*producerGroup
	watchers  map[*watcher]struct{}
	gen       uint64 // bumped by every heartbeat; marks what it named
	stamp     int64  // last version stamped on a subscription given without one

	rr atomic.Uint64 // round-robin cursor of ProducerConn

	lockMu sync.Mutex
	locks  map[lockKey]*lockEntry
	owned  map[ClientID]map[lockKey]struct{} // locks held per client
}

type client struct {
	id        ClientID
	protocol  string
	language  string
	version   string
	conn      Conn
	seen      time.Time
	producers map[string]uint64 // group → generation of the last heartbeat naming it
	consumers map[string]*member
}

// member is one client's membership in one consumer group.
type member struct {
	client   *client
	group    *consumerGroup
	settings Consumer // Subscriptions unused
	subs     map[string]memberSub
	mark     uint64 // generation of the last heartbeat naming the group
}

type memberSub struct {
	sub   Subscription // as held: Version stamped when the client gave 0
	given int64        // Version as the client gave it
	mark  uint64
}

type consumerGroup struct {
	name     string
	settings Consumer // latest heartbeat's; Subscriptions unused
	members  map[ClientID]*member
	subs     map[string]effective // effective subscription per topic
}

// effective is a group's subscription to a topic and the member it comes
// from: the member subscription with the highest version.
type effective struct {
	sub  Subscription
	from ClientID
}

type producerGroup struct {
	members map[ClientID]*client
	order   []ClientID // sorted member ids, for round-robin
}

// New returns an empty registry.
func New(opts Options) *Registry {
	opts.EnsureDefaults()
	return &Registry{
		opts:      opts,
		clients:   make(map[ClientID]*client),
		conns:     make(map[Conn]map[ClientID]struct{}),
		consumers: make(map[string]*consumerGroup),
		producers: make(map[string]*producerGroup),
		watchers:  make(map[*watcher]struct{}),
		locks:     make(map[lockKey]*lockEntry),
		owned:     make(map[ClientID]map[lockKey]struct{}),
	}
}

// Heartbeat registers or refreshes a client from a full statement of its
// memberships. It returns the consumer groups, sorted, whose membership or
// effective subscriptions changed (the groups whose clients should
// rebalance); nil when nothing changed. A heartbeat without a client id is
// ignored.
//
// Heartbeat copies what it keeps; the caller may reuse hb afterwards.
func (r *Registry) Heartbeat(hb Heartbeat) (changed []string) {
	if hb.Client == "" {
		return nil
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	c := r.clients[hb.Client]
	if c == nil {
		c = &client{id: hb.Client}
		r.clients[c.id] = c
	}
	c.seen = now
	if hb.Protocol != "" {
		c.protocol = hb.Protocol
	}
	if hb.Language != "" {
		c.language = hb.Language
	}
	if hb.Version != "" {
		c.version = hb.Version
	}
	if hb.Conn != nil && hb.Conn != c.conn {
		r.setConn(c, hb.Conn)
	}
	r.syncProducers(c, hb.Producers)
	var changes []Change
	r.syncConsumers(c, hb.Consumers, now, &changes)
	return r.commit(changes)
}

// Unregister removes a client from the named producer group and consumer
// group, as a client does when one of its producers or consumers shuts
// down. When both names are empty, or the client is left in no group, the
// client is forgotten with all its queue locks. It returns the consumer
// groups that changed.
func (r *Registry) Unregister(id ClientID, producerGroup, consumerGroup string) (changed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.clients[id]
	if c == nil {
		return nil
	}
	var changes []Change
	if producerGroup == "" && consumerGroup == "" {
		r.drop(c, &changes, true)
		return r.commit(changes)
	}
	if _, ok := c.producers[producerGroup]; ok && producerGroup != "" {
		r.leaveProducer(c, producerGroup)
	}
	if m := c.consumers[consumerGroup]; m != nil && consumerGroup != "" {
		r.leaveConsumer(m, &changes, true)
	}
	if len(c.producers) == 0 && len(c.consumers) == 0 {
		r.drop(c, &changes, true)
	}
	return r.commit(changes)
}

// Disconnect forgets every client whose connection is conn, with its queue
// locks; front-ends call it when a connection closes. A client that has
// moved to another connection since is kept. It returns the consumer
// groups that changed.
func (r *Registry) Disconnect(conn Conn) (changed []string) {
	if conn == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var changes []Change
	for id := range r.conns[conn] {
		r.drop(r.clients[id], &changes, false)
	}
	return r.commit(changes)
}

// Expire forgets every client whose last heartbeat is more than
// Options.Expiry old, with its queue locks, and discards expired queue
// locks. The engine calls it periodically. It returns the consumer groups
// that changed.
func (r *Registry) Expire() (changed []string) {
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var changes []Change
	for _, c := range r.clients {
		if now.Sub(c.seen) > r.opts.Expiry {
			r.drop(c, &changes, true)
		}
	}
	r.purgeLocks(now)
	return r.commit(changes)
}

// Client returns a registered client.
func (r *Registry) Client(id ClientID) (ClientInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := r.clients[id]
	if c == nil {
		return ClientInfo{}, false
	}
	return c.info(), true
}

// ConsumerIDs returns the ids of a consumer group's clients, sorted; what
// GET_CONSUMER_LIST_BY_GROUP answers.
func (r *Registry) ConsumerIDs(group string) []ClientID {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return nil
	}
	return g.ids()
}

// Consumers returns the clients of a consumer group, sorted by id.
func (r *Registry) Consumers(group string) []ConsumerInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]ConsumerInfo, 0, len(g.members))
	for _, m := range g.members {
		ci := ConsumerInfo{ClientInfo: m.client.info(), Consumer: m.settings}
		ci.Subscriptions = make([]Subscription, 0, len(m.subs))
		for _, s := range m.subs {
			ci.Subscriptions = append(ci.Subscriptions, s.sub)
		}
		sortSubs(ci.Subscriptions)
		out = append(out, ci)
	}
	slices.SortFunc(out, func(a, b ConsumerInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

// ConsumerGroup describes a consumer group that has clients.
func (r *Registry) ConsumerGroup(group string) (GroupInfo, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return GroupInfo{}, false
	}
	gi := GroupInfo{Consumer: g.settings, Clients: g.ids()}
	gi.Subscriptions = make([]Subscription, 0, len(g.subs))
	for _, e := range g.subs {
		gi.Subscriptions = append(gi.Subscriptions, e.sub)
	}
	sortSubs(gi.Subscriptions)
	return gi, true
}

// Subscription returns a consumer group's effective subscription to a
// topic. RocketMQ keeps one subscription per (group, topic): among the
// group's clients subscribing the topic, the one with the highest Version
// wins (the latest subscribe), and a tie keeps the current one. The
// subscription disappears when no client of the group subscribes the topic
// any more.
func (r *Registry) Subscription(group, topic string) (Subscription, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	g := r.consumers[group]
	if g == nil {
		return Subscription{}, false
	}
	e, ok := g.subs[topic]
	return e.sub, ok
}

// ConsumerGroups returns the consumer groups that have clients, sorted.
func (r *Registry) ConsumerGroups() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.consumers))
	for name := range r.consumers {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ConsumerGroupsOf returns the consumer groups subscribing a topic, sorted.
func (r *Registry) ConsumerGroupsOf(topic string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for name, g := range r.consumers {
		if _, ok := g.subs[topic]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ProducerGroups returns the producer groups that have clients, sorted.
func (r *Registry) ProducerGroups() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.producers))
	for name := range r.producers {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Producers returns the clients of a producer group, sorted by id.
func (r *Registry) Producers(group string) []ClientInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	pg := r.producers[group]
	if pg == nil {
		return nil
	}
	out := make([]ClientInfo, 0, len(pg.order))
	for _, id := range pg.order {
		out = append(out, pg.members[id].info())
	}
	return out
}

// ProducerConn returns the connection of a live producer of the group, for
// a transaction check. Successive calls go round the group's producers;
// producers without a connection are skipped.
func (r *Registry) ProducerConn(group string) (Conn, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	pg := r.producers[group]
	if pg == nil {
		return nil, false
	}
	n := uint64(len(pg.order))
	start := r.rr.Add(1)
	for i := range n {
		if c := pg.members[pg.order[(start+i)%n]]; c.conn != nil {
			return c.conn, true
		}
	}
	return nil, false
}

// --- internals; every method below runs with r.mu held for writing ---

func (c *client) info() ClientInfo {
	return ClientInfo{ID: c.id, Protocol: c.protocol, Language: c.language, Version: c.version, Conn: c.conn, LastHeartbeat: c.seen}
}

func (g *consumerGroup) ids() []ClientID {
	out := make([]ClientID, 0, len(g.members))
	for id := range g.members {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func sortSubs(s []Subscription) {
	slices.SortFunc(s, func(a, b Subscription) int { return strings.Compare(a.Topic, b.Topic) })
}

func (r *Registry) setConn(c *client, conn Conn) {
	r.unindexConn(c)
	c.conn = conn
	if conn == nil {
		return
	}
	set := r.conns[conn]
	if set == nil {
		set = make(map[ClientID]struct{}, 1)
		r.conns[conn] = set
	}
	set[c.id] = struct{}{}
}

func (r *Registry) unindexConn(c *client) {
	if c.conn == nil {
		return
	}
	if set := r.conns[c.conn]; set != nil {
		delete(set, c.id)
		if len(set) == 0 {
			delete(r.conns, c.conn)
		}
	}
}

// syncProducers makes c's producer groups exactly names. Names are marked
// with the current generation; groups left unmarked were left.
func (r *Registry) syncProducers(c *client, names []string) {
	gen := r.gen
	marked := 0
	for _, name := range names {
		if name == "" {
			continue
		}
		mark, ok := c.producers[name]
		if !ok {
			r.joinProducer(c, name)
		}
		if mark != gen {
			c.producers[name] = gen
			marked++
		}
	}
	if marked == len(c.producers) {
		return
	}
	for name, mark := range c.producers {
		if mark != gen {
			r.leaveProducer(c, name)
		}
	}
}

func (r *Registry) joinProducer(c *client, name string) {
	if c.producers == nil {
		c.producers = make(map[string]uint64, 1)
	}
	pg := r.producers[name]
	if pg == nil {
		pg = &producerGroup{members: make(map[ClientID]*client, 1)}
		r.producers[name] = pg
	}
	pg.members[c.id] = c
	if i, found := slices.BinarySearch(pg.order, c.id); !found {
		pg.order = slices.Insert(pg.order, i, c.id)
	}
}

func (r *Registry) leaveProducer(c *client, name string) {
	delete(c.producers, name)
	pg := r.producers[name]
	if pg == nil {
		return
	}
	delete(pg.members, c.id)
	if i, found := slices.BinarySearch(pg.order, c.id); found {
		pg.order = slices.Delete(pg.order, i, i+1)
	}
	if len(pg.members) == 0 {
		delete(r.producers, name)
	}
}

// syncConsumers makes c's consumer memberships exactly list.
func (r *Registry) syncConsumers(c *client, list []Consumer, now time.Time, changes *[]Change) {
	gen := r.gen
	marked := 0
	for i := range list {
		spec := &list[i]
		if spec.Group == "" {
			continue
		}
		m := c.consumers[spec.Group]
		if m == nil {
			m = r.joinConsumer(c, spec.Group, changes)
		}
		if m.mark != gen {
			m.mark = gen
			marked++
		}
		set := Consumer{Group: spec.Group, Type: spec.Type, Model: spec.Model, From: spec.From, FIFO: spec.FIFO}
		m.settings = set
		m.group.settings = set
		r.syncSubs(m, spec.Subscriptions, now, changes)
	}
	if marked == len(c.consumers) {
		return
	}
	for _, m := range c.consumers {
		if m.mark != gen {
			r.leaveConsumer(m, changes, true)
		}
	}
}

func (r *Registry) joinConsumer(c *client, name string, changes *[]Change) *member {
	g := r.consumers[name]
	if g == nil {
		g = &consumerGroup{
			name:    name,
			members: make(map[ClientID]*member, 1),
			subs:    make(map[string]effective),
		}
		r.consumers[name] = g
	}
	m := &member{client: c, group: g}
	g.members[c.id] = m
	if c.consumers == nil {
		c.consumers = make(map[string]*member, 1)
	}
	c.consumers[name] = m
	*changes = append(*changes, Change{Group: name, Kind: Joined, Client: c.id})
	return m
}

// leaveConsumer ends a membership: the group recomputes the subscriptions
// the member contributed (or disappears when it was the last member) and
// the client's queue locks in the group are released.
func (r *Registry) leaveConsumer(m *member, changes *[]Change, releaseLocks bool) {
	c, g := m.client, m.group
	delete(c.consumers, g.name)
	delete(g.members, c.id)
	*changes = append(*changes, Change{Group: g.name, Kind: Left, Client: c.id})
	if len(g.members) == 0 {
		delete(r.consumers, g.name)
	} else {
		for topic := range m.subs {
			r.topicChanged(g, topic, c.id, changes)
		}
	}
	if releaseLocks {
		r.releaseLocks(c.id, g.name)
	}
}

// drop forgets c, and its queue locks when releaseLocks is set. A client
// whose connection closed keeps its locks until they expire, as Java
// brokers do, since it may still be consuming what it fetched under them.
func (r *Registry) drop(c *client, changes *[]Change, releaseLocks bool) {
	for name := range c.producers {
		r.leaveProducer(c, name)
	}
	for _, m := range c.consumers {
		r.leaveConsumer(m, changes, releaseLocks)
	}
	r.unindexConn(c)
	delete(r.clients, c.id)
	if releaseLocks {
		r.releaseLocks(c.id, "")
	}
}

func normalizeSub(s Subscription) Subscription {
	if s.ExprType == "" {
		s.ExprType = ExprTag
	}
	if s.ExprType == ExprTag {
		s.Expression = strings.TrimSpace(s.Expression)
		if s.Expression == "" {
			s.Expression = "*"
		}
	}
	return s
}

// sameAsGiven reports whether a held subscription is what the client sent
// again in s (already normalized).
func (ms memberSub) sameAsGiven(s Subscription) bool {
	return ms.given == s.Version && ms.sub.ExprType == s.ExprType && ms.sub.Expression == s.Expression
}

// syncSubs makes m's subscriptions exactly subs and recomputes the group's
// effective subscription of every topic that changed. The common case, a
// heartbeat repeating the previous one, allocates nothing.
func (r *Registry) syncSubs(m *member, subs []Subscription, now time.Time, changes *[]Change) {
	gen := r.gen
	same, marked := true, 0
	for _, s := range subs {
		if s.Topic == "" {
			continue
		}
		s = normalizeSub(s)
		old, ok := m.subs[s.Topic]
		if !ok || !old.sameAsGiven(s) {
			same = false
			break
		}
		if old.mark != gen {
			old.mark = gen
			m.subs[s.Topic] = old
			marked++
		}
	}
	if same && marked == len(m.subs) {
		return
	}

	next := make(map[string]memberSub, len(subs))
	for _, s := range subs {
		if s.Topic == "" {
			continue
		}
		s = normalizeSub(s)
		if old, ok := m.subs[s.Topic]; ok && old.sameAsGiven(s) {
			next[s.Topic] = old
			continue
		}
		held := s
		if held.Version == 0 {
			held.Version = r.nextStamp(now)
		}
		next[s.Topic] = memberSub{sub: held, given: s.Version, mark: gen}
	}
	prev := m.subs
	m.subs = next
	for topic, ns := range next {
		if os, ok := prev[topic]; !ok || os.sub != ns.sub {
			r.topicChanged(m.group, topic, m.client.id, changes)
		}
	}
	for topic := range prev {
		if _, ok := next[topic]; !ok {
			r.topicChanged(m.group, topic, m.client.id, changes)
		}
	}
}

// nextStamp returns a version for a subscription given without one: the
// time in nanoseconds, strictly increasing.
func (r *Registry) nextStamp(now time.Time) int64 {
	v := now.UnixNano()
	if v <= r.stamp {
		v = r.stamp + 1
	}
	r.stamp = v
	return v
}

// topicChanged updates the group's effective subscription to topic after
// member from changed or dropped its own (or left the group). The
// effective subscription is the member subscription with the highest
// version; most updates decide that from the current one alone, and only
// when the member that provided it lowers or drops it are all members
// consulted. Changes of expression, and the topic appearing or
// disappearing, are recorded as caused by from.
func (r *Registry) topicChanged(g *consumerGroup, topic string, from ClientID, changes *[]Change) {
	cur, had := g.subs[topic]
	var ms memberSub
	ok := false
	if m := g.members[from]; m != nil {
		ms, ok = m.subs[topic]
	}
	switch {
	case !had && !ok:
		return
	case !had:
		g.setSub(topic, effective{ms.sub, from}, cur, had, from, changes)
	case cur.from != from:
		// The provider is unchanged, so cur is still the highest of the
		// others; from wins only with a higher version (a tie keeps cur).
		if ok && ms.sub.Version > cur.sub.Version {
			g.setSub(topic, effective{ms.sub, from}, cur, had, from, changes)
		}
	case ok && ms.sub.Version >= cur.sub.Version:
		g.setSub(topic, effective{ms.sub, from}, cur, had, from, changes)
	default:
		g.recompute(topic, cur, from, changes)
	}
}

// recompute finds the effective subscription to topic among all members:
// the highest version; on a tie one equal to the current one, else the
// one of the smallest client id.
func (g *consumerGroup) recompute(topic string, cur effective, cause ClientID, changes *[]Change) {
	var best effective
	found, keep := false, false
	for id, m := range g.members {
		ms, ok := m.subs[topic]
		if !ok {
			continue
		}
		switch {
		case !found || ms.sub.Version > best.sub.Version:
			best, keep = effective{ms.sub, id}, ms.sub == cur.sub
		case ms.sub.Version < best.sub.Version || keep:
		case ms.sub == cur.sub:
			best, keep = effective{ms.sub, id}, true
		case id < best.from:
			best.sub, best.from = ms.sub, id
		}
		found = true
	}
	if !found {
		delete(g.subs, topic)
		*changes = append(*changes, Change{Group: g.name, Kind: SubscriptionChanged, Client: cause, Topic: topic})
		return
	}
	g.setSub(topic, best, cur, true, cause, changes)
}

// setSub installs an effective subscription, recording a change when the
// topic is new or its expression differs from the previous one.
func (g *consumerGroup) setSub(topic string, e, prev effective, had bool, cause ClientID, changes *[]Change) {
	g.subs[topic] = e
	if !had || e.sub.ExprType != prev.sub.ExprType || e.sub.Expression != prev.sub.Expression {
		*changes = append(*changes, Change{Group: g.name, Kind: SubscriptionChanged, Client: cause, Topic: topic})
	}
}

// commit publishes changes to the watchers and returns the groups they
// touch, sorted.
func (r *Registry) commit(changes []Change) []string {
	if len(changes) == 0 {
		return nil
	}
	groups := make([]string, 0, 1)
	for _, ch := range changes {
		if n := len(groups); n == 0 || groups[n-1] != ch.Group {
			groups = append(groups, ch.Group)
		}
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	for w := range r.watchers {
		w.push(changes)
	}
	return groups
}
