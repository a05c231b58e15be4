package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ErrNoNetns means the harness cannot make network namespaces here (not
// root, or no ip command), so it runs on loopback and refuses partitions.
var ErrNoNetns = errors.New("chaos: network namespaces unavailable")

// network places the cluster's processes: in namespaces of their own on a
// bridge, or all on loopback.
type network struct {
	netns  bool
	id     string // unique per run: in every name the run creates
	bridge string
	subnet string // "10.x.y."
	nodes  map[string]*nsNode
	// why says why namespaces are off, for ErrNoNetns.
	why string
}

// nsNode is a process's namespace and address.
type nsNode struct {
	name string // the cluster's name for the node
	ns   string
	veth string // host side
	ip   string
	cut  []string // the peers a partition cut it off from
}

// NetnsSupport returns nil when the harness can run each process in a
// network namespace of its own, else an error that says what is missing.
func NetnsSupport() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root", ErrNoNetns)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: no ip command (iproute2): %w", ErrNoNetns, err)
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("%w: the kernel has no network namespaces: %w", ErrNoNetns, err)
	}
	return nil
}

// newNetwork returns a network in namespaces when netns, else on loopback.
// In namespaces it creates the run's bridge on a /24 in 10.0.0.0/8 that
// no route of the host uses.
func newNetwork(ctx context.Context, netns bool) (*network, error) {
	b := make([]byte, 4)
	rand.Read(b)
	n := &network{netns: netns, id: "kc" + hex.EncodeToString(b)[:5], nodes: map[string]*nsNode{}}
	if !netns {
		return n, nil
	}
	if err := NetnsSupport(); err != nil {
		return nil, err
	}
	removeStale(ctx)
	routes, err := exec.CommandContext(ctx, "ip", "-4", "route", "show", "table", "all").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("chaos: ip route: %w: %s", err, routes)
	}
	for i := 0; ; i++ {
		n.subnet = fmt.Sprintf("10.%d.%d.", 100+int(b[2]+byte(i))%100, b[3]+byte(i*7))
		if !strings.Contains(string(routes), n.subnet) {
			break
		}
		if i > 50 {
			return nil, errors.New("chaos: no free 10.x.y.0/24 for the bridge")
		}
	}
	n.bridge = n.id + "br"
	if err := n.ip(ctx, "link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"addr", "add", n.subnet + "1/24", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	} {
		if err := n.ip(ctx, args...); err != nil {
			n.close()
			return nil, err
		}
	}
	return n, nil
}

// nsPrefix starts the name of every namespace the harness makes:
// nsPrefix-<run id>-<harness pid>-<node>.
const nsPrefix = "karman-chaos"

// removeStale removes the namespaces and bridges of runs whose harness
// process is gone (killed before it could clean up).
func removeStale(ctx context.Context) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for line := range strings.Lines(string(out)) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, nsPrefix+"-")
		parts := strings.SplitN(rest, "-", 3)
		if !ok || len(parts) != 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[1])
		if err != nil || syscall.Kill(pid, 0) == nil || pid == os.Getpid() {
			continue // alive (or ours)
		}
		exec.CommandContext(ctx, "ip", "netns", "del", name).Run()
		exec.CommandContext(ctx, "ip", "link", "del", parts[0]+"br").Run()
	}
}

// ip runs the ip command with args.
func (n *network) ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNS runs the ip command with args in node's namespace.
func (n *network) inNS(ctx context.Context, node *nsNode, args ...string) error {
	return n.ip(ctx, append([]string{"netns", "exec", node.ns, "ip"}, args...)...)
}

// addNode creates a node's namespace and returns the host address its
// processes listen on (127.0.0.1 on loopback).
func (n *network) addNode(ctx context.Context, name string) (string, error) {
	if !n.netns {
		return "127.0.0.1", nil
	}
	i := len(n.nodes) + 2
	node := &nsNode{name: name, ns: fmt.Sprintf("%s-%s-%d-%s", nsPrefix, n.id, os.Getpid(), name), veth: fmt.Sprintf("%sv%d", n.id, i), ip: fmt.Sprintf("%s%d", n.subnet, i)}
	if err := n.ip(ctx, "netns", "add", node.ns); err != nil {
		return "", err
	}
	n.nodes[name] = node
	peer := node.veth + "p"
	steps := [][]string{
		{"link", "add", node.veth, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", node.ns},
		{"link", "set", node.veth, "master", n.bridge},
		{"link", "set", node.veth, "up"},
	}
	for _, args := range steps {
		if err := n.ip(ctx, args...); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "set", peer, "name", "eth0"},
		{"addr", "add", node.ip + "/24", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		// The local table moves behind the partition rules (pref 10 and
		// 11), so that they drop packets addressed to this node too.
		{"rule", "add", "pref", "100", "table", "local"},
		{"rule", "del", "pref", "0"},
	} {
		if err := n.inNS(ctx, node, args...); err != nil {
			return "", err
		}
	}
	return node.ip, nil
}

// command returns the command that runs bin with args on node.
func (n *network) command(ctx context.Context, node, bin string, args ...string) *exec.Cmd {
	if !n.netns {
		return exec.CommandContext(ctx, bin, args...)
	}
	// ip netns exec execs the program, so its process is the one started.
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.nodes[node].ns, bin}, args...)...)
}

// listenAddr returns an address on node for a listener: a fixed port in
// a namespace, a free loopback port otherwise.
// harnessHost is the address the harness's own listeners (the proxies)
// take, reachable from every node: the bridge's in namespaces, else
// loopback.
func (n *network) harnessHost() string {
	if n.netns {
		return n.subnet + "1"
	}
	return "127.0.0.1"
}

func (n *network) listenAddr(host string, port int) (string, error) {
	if n.netns {
		return net.JoinHostPort(host, fmt.Sprint(port)), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("chaos: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// partition cuts node off from peers in both directions, with one ip
// command so that every peer is cut at once.
func (n *network) partition(ctx context.Context, node string, peers []string) error {
	if !n.netns {
		return fmt.Errorf("%w (%s): a partition needs them", ErrNoNetns, n.why)
	}
	nd := n.nodes[node]
	var batch strings.Builder
	for i, p := range peers {
		for j, dir := range []string{"from", "to"} {
			fmt.Fprintf(&batch, "rule add pref %d %s %s/32 blackhole\n", 10+2*i+j, dir, n.nodes[p].ip)
		}
	}
	cmd := exec.CommandContext(ctx, "ip", "-netns", nd.ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(batch.String())
	nd.cut = peers
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("chaos: partition %s: ip -batch: %w: %s", node, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// heal removes node's partition.
func (n *network) heal(ctx context.Context, node string) error {
	nd := n.nodes[node]
	var errs []error
	for i := range nd.cut {
		for j := range 2 {
			if err := n.inNS(ctx, nd, "rule", "del", "pref", fmt.Sprint(10+2*i+j)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	nd.cut = nil
	return errors.Join(errs...)
}

// close removes every namespace and the bridge; deleting a namespace
// deletes its end of the veth pair and with it the pair.
func (n *network) close() error {
	if !n.netns {
		return nil
	}
	ctx := context.Background()
	var errs []error
	for _, node := range n.nodes {
		if err := n.ip(ctx, "netns", "del", node.ns); err != nil {
			errs = append(errs, err)
		}
		// A veth whose peer never moved into the namespace is still here.
		exec.Command("ip", "link", "del", node.veth).Run()
	}
	if n.bridge != "" {
		if err := n.ip(ctx, "link", "del", n.bridge); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
