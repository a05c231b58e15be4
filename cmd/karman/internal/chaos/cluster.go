package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// The cluster's fixed names.
const (
	ClusterName = "ChaosCluster"
	Topic       = "ChaosTopic"      // the workload's topic
	ProbeTopic  = "ChaosProbeTopic" // the harness's direct probe sends
	// QueuesPerGroup is the workload topic's queue count on each group.
	QueuesPerGroup = 4
)

// Groups are the cluster's broker groups; each has members 1 and 2.
var Groups = []string{"broker-a", "broker-b"}

// ClusterOptions configure a cluster. The zero value of each field but
// Binary gets the default it names.
type ClusterOptions struct {
	// Binary is the karman executable to run.
	Binary string
	// Netns puts each process in a network namespace of its own; it
	// needs root and ip (see NetnsSupport).
	Netns bool
	// Replication is "sync" (default) or "async".
	Replication string
	// HeartbeatTimeout is the controllers' --broker-heartbeat-timeout
	// (2 s); the brokers send heartbeats every quarter of it and hold a
	// lease of half of it.
	HeartbeatTimeout time.Duration
	// Dir holds the processes' data (a new temporary directory, removed
	// by Close).
	Dir string
	// Log, when set, gets a line per step.
	Log func(format string, args ...any)
	// HAProxy fronts each broker's replication port with a Proxy in
	// the harness, which the broker advertises to its replicas, so that
	// delay-replication and lossy-replication can slow and break the
	// stream. Off by default: a partition cuts namespaces, not the
	// harness's relays.
	HAProxy bool
	// Delay is what every chunk of the replication stream is held in
	// the proxies during delay-replication and lossy-replication (20 ms).
	Delay time.Duration
	// Loss is the probability per chunk of a stall or a reset in the
	// proxies during lossy-replication (0.02).
	Loss float64
}

// Cluster is a running cluster of karman processes.
type Cluster struct {
	opts        ClusterOptions
	net         *network
	dir         string
	removeDir   bool
	controllers []*proc // c1..c3: name server and controller each
	nsAddrs     []string
	apiAddrs    []string
	brokers     map[string]*broker // by node name: a1 a2 b1 b2
}

// broker is one member of a broker group.
type broker struct {
	*proc
	group string
	id    int64
	addr  string // the remoting address clients dial
	data  string
	proxy *Proxy // in front of its replication port, with HAProxy
}

func (o *ClusterOptions) ensureDefaults() {
	if o.Replication == "" {
		o.Replication = "sync"
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Delay == 0 {
		o.Delay = 20 * time.Millisecond
	}
	if o.Loss == 0 {
		o.Loss = 0.02
	}
}

// StartCluster starts the controllers and the brokers, creates the
// workload's topics and returns once every group has its master and an
// in-sync replica and the name servers route both topics. On an error it
// removes what it made.
func StartCluster(ctx context.Context, opts ClusterOptions) (_ *Cluster, err error) {
	opts.ensureDefaults()
	if opts.Binary == "" {
		return nil, errors.New("chaos: no karman binary")
	}
	if opts.Replication != "sync" && opts.Replication != "async" {
		return nil, fmt.Errorf("chaos: replication %q: want sync or async", opts.Replication)
	}
	if opts.Delay < 0 || !(opts.Loss >= 0 && opts.Loss <= 1) {
		return nil, fmt.Errorf("%w: delay %s, loss %v: want a delay of 0 or more and a loss in [0, 1]", ErrBadProxyFault, opts.Delay, opts.Loss)
	}
	c := &Cluster{opts: opts, brokers: map[string]*broker{}}
	if c.dir = opts.Dir; c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "karman-chaos-"); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		c.removeDir = true
	}
	if c.net, err = newNetwork(ctx, opts.Netns); err != nil {
		if c.removeDir {
			os.RemoveAll(c.dir)
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.Logs())
			c.Close()
		}
	}()
	if !opts.Netns {
		c.net.why = "the cluster runs on loopback"
	}

	// Controllers, each with the name server.
	var peers, raftAddrs []string
	var hosts []string
	for i := range 3 {
		name := fmt.Sprintf("c%d", i+1)
		host, err := c.net.addNode(ctx, name)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, host)
		ns, err := c.net.listenAddr(host, 9876)
		if err != nil {
			return nil, err
		}
		api, err := c.net.listenAddr(host, 9878)
		if err != nil {
			return nil, err
		}
		raft, err := c.net.listenAddr(host, 9879)
		if err != nil {
			return nil, err
		}
		c.nsAddrs, c.apiAddrs, raftAddrs = append(c.nsAddrs, ns), append(c.apiAddrs, api), append(raftAddrs, raft)
		peers = append(peers, name+"="+raft)
	}
	for i := range 3 {
		name := fmt.Sprintf("c%d", i+1)
		c.controllers = append(c.controllers, &proc{name: name, bin: opts.Binary, net: c.net, args: []string{
			"namesrv", "--controller", "--addr", c.nsAddrs[i], "--controller-id", name,
			"--controller-peers", strings.Join(peers, ","), "--controller-addr", c.apiAddrs[i],
			"--data", filepath.Join(c.dir, name), "--broker-heartbeat-timeout", opts.HeartbeatTimeout.String(),
			"--log-level", "warn",
		}})
	}
	if err := startAll(ctx, c.controllers); err != nil {
		return nil, err
	}
	opts.Log("controllers started: %s", strings.Join(c.apiAddrs, ","))
	if err := poll(ctx, "a controller leader", 30*time.Second, 100*time.Millisecond, func() error {
		_, err := c.controllerLeader()
		return err
	}); err != nil {
		return nil, err
	}

	// Brokers: member 1 of each group first, so that it is the master.
	var firsts, seconds []*proc
	for _, g := range Groups {
		for id := int64(1); id <= 2; id++ {
			name := fmt.Sprintf("%c%d", g[len(g)-1], id)
			host, err := c.net.addNode(ctx, name)
			if err != nil {
				return nil, err
			}
			addr, err := c.net.listenAddr(host, 10911)
			if err != nil {
				return nil, err
			}
			ha, err := c.net.listenAddr(host, 10912)
			if err != nil {
				return nil, err
			}
			b := &broker{group: g, id: id, addr: addr, data: filepath.Join(c.dir, name)}
			advertise := ha
			if opts.HAProxy {
				if b.proxy, err = NewProxy(net.JoinHostPort(c.net.harnessHost(), "0"), ha); err != nil {
					return nil, err
				}
				advertise = b.proxy.Addr()
			}
			b.proc = &proc{name: name, bin: opts.Binary, net: c.net, args: []string{
				"serve", "--data", b.data, "--segment-size", "64MiB", "--log-level", "warn",
				"--broker-addr", addr, "--broker-name", g, "--broker-cluster", ClusterName,
				"--broker-namesrv", strings.Join(c.nsAddrs, ","),
				"--namesrv-addr", "off", "--grpc-addr", "off", "--http-addr", "off",
				"--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off",
				"--ha-controller", strings.Join(c.apiAddrs, ","), "--ha-broker-id", fmt.Sprint(id),
				"--ha-addr", ha, "--ha-advertise-addr", advertise, "--ha-replication", opts.Replication,
				"--ha-heartbeat-interval", (opts.HeartbeatTimeout / 4).String(),
				"--ha-controller-lease", (opts.HeartbeatTimeout / 2).String(),
			}}
			c.brokers[name] = b
			if id == 1 {
				firsts = append(firsts, b.proc)
			} else {
				seconds = append(seconds, b.proc)
			}
		}
	}
	if err := startAll(ctx, firsts); err != nil {
		return nil, err
	}
	for _, g := range Groups {
		if err := poll(ctx, g+" master", 30*time.Second, 100*time.Millisecond, func() error {
			gr, err := c.Group(g)
			if err == nil && gr.MasterID != 1 {
				err = fmt.Errorf("master %d", gr.MasterID)
			}
			return err
		}); err != nil {
			return nil, err
		}
	}
	if err := startAll(ctx, seconds); err != nil {
		return nil, err
	}
	for _, g := range Groups {
		m := c.member(g, 1)
		for _, t := range []struct {
			name   string
			queues int32
		}{{Topic, QueuesPerGroup}, {ProbeTopic, 1}} {
			if err := c.createTopic(ctx, m.addr, t.name, t.queues); err != nil {
				return nil, err
			}
		}
	}
	if err := c.WaitHealthy(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	opts.Log("cluster ready (%s replication, %s)", opts.Replication, c.Mode())
	return c, nil
}

// startAll starts processes side by side.
func startAll(ctx context.Context, ps []*proc) error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = p.start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Mode is "netns" or "loopback".
func (c *Cluster) Mode() string {
	if c.net.netns {
		return "netns"
	}
	return "loopback"
}

// NameServers returns the name servers' addresses.
func (c *Cluster) NameServers() []string { return slices.Clone(c.nsAddrs) }

// member returns member id of group.
func (c *Cluster) member(group string, id int64) *broker {
	for _, b := range c.brokers {
		if b.group == group && b.id == id {
			return b
		}
	}
	return nil
}

// WaitHealthy waits until every group has both members in sync, every
// broker process runs, the name servers route both topics to every
// group's master, and the replicas hold the topics.
func (c *Cluster) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, "a healthy cluster", timeout, 200*time.Millisecond, func() error {
		for _, b := range c.brokers {
			if !b.isRunning() {
				return fmt.Errorf("%s is not running", b.name)
			}
		}
		for _, g := range Groups {
			gr, err := c.Group(g)
			if err != nil {
				return err
			}
			if len(gr.SyncStateSet) != 2 {
				return fmt.Errorf("%s in sync: %v", g, gr.SyncStateSet)
			}
			m := c.member(g, gr.MasterID)
			for _, topic := range []string{Topic, ProbeTopic} {
				addr, err := c.RouteMaster(ctx, topic, g)
				if err != nil {
					return err
				}
				if addr != m.addr {
					return fmt.Errorf("route of %s names %s as %s's master, the controller %s", topic, addr, g, m.addr)
				}
			}
			for _, b := range c.brokers {
				if b.group == g && b.id != gr.MasterID {
					if err := hasTopics(ctx, b.addr, Topic, ProbeTopic); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// invoke sends one request to addr on a connection of its own.
func invoke(ctx context.Context, addr string, code wire.RequestCode, h wire.Header, body []byte) (*wire.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	p, err := peer.Dial(ctx, addr, peer.Options{DialTimeout: time.Second, RequestTimeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	req := wire.NewRequest(code, nil)
	if h != nil {
		req.EncodeHeader(h)
	}
	req.Body = body
	return p.Invoke(ctx, req)
}

// createTopic creates topic on the broker at addr.
func (c *Cluster) createTopic(ctx context.Context, addr, topic string, queues int32) error {
	resp, err := invoke(ctx, addr, wire.UpdateAndCreateTopic, &wire.CreateTopicRequestHeader{
		Topic: topic, DefaultTopic: message.TopicAutoCreate, ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: wire.PermRead | wire.PermWrite, TopicFilterType: wire.TopicFilterSingleTag,
	}, nil)
	if err == nil && resp.ResponseCode() != wire.Success {
		err = fmt.Errorf("%s %s", resp.ResponseCode(), resp.Remark)
	}
	if err != nil {
		return fmt.Errorf("chaos: create topic %s on %s: %w", topic, addr, err)
	}
	return nil
}

// hasTopics returns nil once the broker at addr has every topic.
func hasTopics(ctx context.Context, addr string, topics ...string) error {
	resp, err := invoke(ctx, addr, wire.GetAllTopicConfig, nil, nil)
	if err != nil {
		return err
	}
	if resp.ResponseCode() != wire.Success {
		return fmt.Errorf("%s: %s %s", addr, resp.ResponseCode(), resp.Remark)
	}
	for _, t := range topics {
		if !strings.Contains(string(resp.Body), `"`+t+`"`) {
			return fmt.Errorf("%s has no topic %s yet", addr, t)
		}
	}
	return nil
}

// RouteMaster returns the address the first name server that answers
// routes group's master of topic to.
func (c *Cluster) RouteMaster(ctx context.Context, topic, group string) (string, error) {
	var errs []error
	for _, ns := range c.nsAddrs {
		resp, err := invoke(ctx, ns, wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: topic}, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.ResponseCode() != wire.Success {
			errs = append(errs, fmt.Errorf("route of %s at %s: %s %s", topic, ns, resp.ResponseCode(), resp.Remark))
			continue
		}
		r, err := wire.DecodeTopicRouteData(resp.Body)
		if err != nil {
			return "", err
		}
		for _, b := range r.BrokerDatas {
			if b.BrokerName == group {
				if a, ok := b.BrokerAddrs[wire.MasterID]; ok {
					return a, nil
				}
			}
		}
		return "", fmt.Errorf("route of %s at %s has no master of %s", topic, ns, group)
	}
	return "", fmt.Errorf("no name server answered: %w", errors.Join(errs...))
}

// Probe sends one message to the probe topic on the broker at addr and
// returns nil when it is acknowledged.
func Probe(ctx context.Context, addr, group string) error {
	props := message.AppendProperties(nil, map[string]string{message.PropertyWait: "true"})
	resp, err := invoke(ctx, addr, wire.SendMessage, &wire.SendMessageRequestHeader{
		ProducerGroup: "CHAOS_PROBE", Topic: ProbeTopic, DefaultTopic: message.TopicAutoCreate,
		DefaultTopicQueueNums: 1, BornTimestamp: time.Now().UnixMilli(), Properties: string(props), BrokerName: group,
	}, []byte("probe"))
	if err != nil {
		return err
	}
	if resp.ResponseCode() != wire.Success {
		return fmt.Errorf("probe of %s: %s %s", addr, resp.ResponseCode(), resp.Remark)
	}
	return nil
}

// Group returns the controllers' record of a broker group, from the
// first controller that answers.
func (c *Cluster) Group(name string) (controller.Group, error) {
	var errs []error
	for _, a := range c.apiAddrs {
		var gs []controller.Group
		if err := getJSON("http://"+a+"/v1/groups", &gs); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, g := range gs {
			if g.Name == name {
				return g, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s has no group %s: %+v", a, name, gs))
	}
	return controller.Group{}, fmt.Errorf("chaos: group %s: %w", name, errors.Join(errs...))
}

// controllerLeader returns the index of the controller the live
// controllers name as their leader.
func (c *Cluster) controllerLeader() (int, error) {
	var errs []error
	for i, a := range c.apiAddrs {
		if !c.controllers[i].isRunning() {
			continue
		}
		var st controller.Status
		if err := getJSON("http://"+a+"/v1/status", &st); err != nil {
			errs = append(errs, err)
			continue
		}
		for j, p := range c.controllers {
			if st.Leader == p.name && p.isRunning() {
				return j, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s names leader %q", a, st.Leader))
	}
	return -1, fmt.Errorf("chaos: no controller leader: %w", errors.Join(errs...))
}

var httpClient = &http.Client{Timeout: time.Second}

func getJSON(url string, v any) error {
	resp, err := httpClient.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Logs returns the tail of every process's standard error.
func (c *Cluster) Logs() string {
	var b strings.Builder
	ps := slices.Clone(c.controllers)
	for _, name := range slices.Sorted(maps.Keys(c.brokers)) {
		ps = append(ps, c.brokers[name].proc)
	}
	for _, p := range ps {
		if l := p.log(); l != "" {
			fmt.Fprintf(&b, "--- %s:\n%s", p.name, l)
		}
	}
	return b.String()
}

// Close kills every process and removes the namespaces, the bridge and,
// unless given, the data directory.
func (c *Cluster) Close() error {
	var wg sync.WaitGroup
	for _, p := range c.controllers {
		wg.Go(p.kill)
	}
	for _, b := range c.brokers {
		wg.Go(b.kill)
	}
	wg.Wait()
	for _, b := range c.brokers {
		if b.proxy != nil {
			b.proxy.Close()
		}
	}
	err := c.net.close()
	if c.removeDir {
		os.RemoveAll(c.dir)
	}
	return err
}
