package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Faults are the faults Run injects, by name.
var Faults = []string{"kill-master", "kill-replica", "kill-controller-leader", "pause-master", "partition-master", "truncate-replica", "delay-replication", "lossy-replication"}

// ProxyFaults are the faults that need ClusterOptions.HAProxy: Run sets
// it for them.
var ProxyFaults = []string{"delay-replication", "lossy-replication"}

// ErrUnknownFault is a fault name not in Faults.
var ErrUnknownFault = errors.New("chaos: unknown fault")

// TruncateBytes is how much of a replica's commit log tail
// truncate-replica zeroes.
const TruncateBytes = 64 << 10

// target is what a fault hit: a broker of a group or a controller.
type target struct {
	group      string
	broker     *broker
	controller int // index in Cluster.controllers; -1 for a broker
	// masterFault: the group needs another master.
	masterFault bool
}

// CheckFault returns nil for a fault Run knows and can inject with the
// network it asks for.
func CheckFault(name string, netns bool) error {
	if !slices.Contains(Faults, name) {
		return fmt.Errorf("%w %q: want one of %v", ErrUnknownFault, name, Faults)
	}
	if name == "partition-master" && !netns {
		return fmt.Errorf("%w: partition-master cuts a namespace off; run as root with ip, or pick another fault", ErrNoNetns)
	}
	return nil
}

// inject applies fault to group and returns what it hit, and when.
func (c *Cluster) inject(ctx context.Context, fault, group string) (*target, time.Time, error) {
	g, err := c.Group(group)
	if err != nil {
		return nil, time.Time{}, err
	}
	master := c.member(group, g.MasterID)
	var replica *broker
	for _, b := range c.brokers {
		if b.group == group && b != master {
			replica = b
		}
	}
	t := &target{group: group, controller: -1}
	switch fault {
	case "kill-master", "pause-master", "partition-master":
		t.broker, t.masterFault = master, true
	case "kill-replica", "truncate-replica":
		t.broker = replica
	case "delay-replication", "lossy-replication":
		// The stream from the master to its replica runs through the
		// master's proxy; the victim is the master, which stays master.
		t.broker = master
		if master.proxy == nil {
			return nil, time.Time{}, fmt.Errorf("chaos: %s needs the cluster started with HAProxy", fault)
		}
	case "kill-controller-leader":
		i, err := c.controllerLeader()
		if err != nil {
			return nil, time.Time{}, err
		}
		t.controller = i
	default:
		return nil, time.Time{}, fmt.Errorf("%w %q", ErrUnknownFault, fault)
	}
	at := time.Now()
	switch fault {
	case "kill-master", "kill-replica", "truncate-replica":
		t.broker.kill()
	case "kill-controller-leader":
		c.controllers[t.controller].kill()
	case "pause-master":
		err = t.broker.signal(syscall.SIGSTOP)
	case "delay-replication":
		err = c.setProxyFault(group, c.opts.Delay, 0)
	case "lossy-replication":
		err = c.setProxyFault(group, c.opts.Delay, c.opts.Loss)
	case "partition-master":
		var peers []string
		for _, p := range c.controllers {
			peers = append(peers, p.name)
		}
		err = c.net.partition(ctx, t.broker.name, append(peers, replica.name))
	}
	return t, at, err
}

// restore undoes fault: it waits for what the fault should bring about
// (another master, a new controller leader, the heartbeat timeout) and
// then restarts, resumes or reconnects the victim.
func (c *Cluster) restore(ctx context.Context, fault string, t *target) error {
	if t.masterFault {
		// The victim comes back once another master is elected, so that
		// it returns as a replica; if none is, it comes back anyway.
		err := poll(ctx, "another master of "+t.group, 30*time.Second, 50*time.Millisecond, func() error {
			g, err := c.Group(t.group)
			if err == nil && g.MasterID == t.broker.id {
				err = errNotReady
			}
			return err
		})
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil {
			c.opts.Log("%v; restoring %s anyway", err, t.broker.name)
		}
	}
	switch fault {
	case "kill-master":
		return t.broker.start(ctx)
	case "pause-master":
		return t.broker.signal(syscall.SIGCONT)
	case "partition-master":
		return c.net.heal(ctx, t.broker.name)
	case "kill-replica":
		if err := sleep(ctx, c.opts.HeartbeatTimeout); err != nil {
			return err
		}
		return t.broker.start(ctx)
	case "kill-controller-leader":
		err := poll(ctx, "a new controller leader", 30*time.Second, 50*time.Millisecond, func() error {
			i, err := c.controllerLeader()
			if err == nil && i == t.controller {
				err = errNotReady
			}
			return err
		})
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err != nil {
			c.opts.Log("%v", err)
		}
		if err := sleep(ctx, c.opts.HeartbeatTimeout); err != nil {
			return err
		}
		return c.controllers[t.controller].start(ctx)
	case "delay-replication", "lossy-replication":
		// Held for as long as a member's heartbeats may go unanswered,
		// twice over, then cleared.
		if err := sleep(ctx, 2*c.opts.HeartbeatTimeout); err != nil {
			return err
		}
		return c.setProxyFault(t.group, 0, 0)
	case "truncate-replica":
		cut, err := truncateTail(filepath.Join(t.broker.data, "commitlog"), TruncateBytes)
		if err != nil {
			return err
		}
		c.opts.Log("zeroed %d bytes of %s's commit log tail", cut, t.broker.name)
		return t.broker.start(ctx)
	}
	return fmt.Errorf("%w %q", ErrUnknownFault, fault)
}

// proxyCounts sums the Counts of the proxies of group's members.
func (c *Cluster) proxyCounts(group string) (links, stalls, resets int64) {
	for _, b := range c.brokers {
		if b.group == group && b.proxy != nil {
			l, s, r := b.proxy.Counts()
			links, stalls, resets = links+l, stalls+s, resets+r
		}
	}
	return links, stalls, resets
}

// setProxyFault sets the delay and loss of the proxies in front of the
// replication ports of group's members.
func (c *Cluster) setProxyFault(group string, delay time.Duration, loss float64) error {
	for _, b := range c.brokers {
		if b.group == group && b.proxy != nil {
			if err := b.proxy.SetFault(delay, loss); err != nil {
				return err
			}
		}
	}
	return nil
}

// sleep waits for d or ctx's end: a fault held for a fixed time.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// truncateTail zeroes the last n written bytes of the commit log in dir
// (of its last segment with data, up to its all-zero tail) and
// removes its checkpoint, so that the log reopens shorter, as after a
// power loss took its unsynced tail. It returns the bytes zeroed.
func truncateTail(dir string, n int) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("chaos: truncate: %w", err)
	}
	var segs []string
	for _, e := range entries {
		if e.Type().IsRegular() && len(e.Name()) == 20 {
			segs = append(segs, e.Name())
		}
	}
	slices.Sort(segs)
	// The last segment holding data: a segment is made before the writer
	// reaches it.
	var (
		path string
		end  int
	)
	for i := len(segs) - 1; i >= 0 && end == 0; i-- {
		path = filepath.Join(dir, segs[i])
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("chaos: truncate: %w", err)
		}
		end = len(bytes.TrimRight(data, "\x00"))
	}
	if end == 0 {
		return 0, fmt.Errorf("chaos: truncate: no written segment in %s", dir)
	}
	from := max(0, end-n)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("chaos: truncate: %w", err)
	}
	_, err = f.WriteAt(make([]byte, end-from), int64(from))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("chaos: truncate %s: %w", path, err)
	}
	if err := os.Remove(filepath.Join(dir, "checkpoint")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("chaos: truncate: %w", err)
	}
	return end - from, nil
}
