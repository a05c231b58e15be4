package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/epoch"
	msg "github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
)

const segSize = 64 << 10

var quiet = slog.New(slog.NewTextHandler(os.Stderr, nil))

func openEngine(t *testing.T, o engine.Options) *engine.Engine {
	t.Helper()
	o.SegmentSize = segSize
	o.Logger = quiet
	e, err := engine.Open(t.TempDir(), &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if err := e.CreateTopic(meta.Topic{Name: "T", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	return e
}

// serve runs m on a loopback port for log and returns its address.
func serve(t *testing.T, m *Master, log Log) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// follow runs one replication session in the background; stop ends it
// and returns why it ended.
func follow(t *testing.T, r *Replica, addr string) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Session(ctx, addr) }()
	stopped := false
	var err error
	stop = func() error {
		if !stopped {
			cancel()
			err = <-done
			stopped = true
		}
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func logEnd(e *engine.Engine) int64 { _, end := e.LogRange(); return end }

func send(t *testing.T, e *engine.Engine, n int, tag string) {
	t.Helper()
	for i := range n {
		m := &msg.Message{Topic: "T", Body: fmt.Appendf(nil, "%s-%d-%0700d", tag, i, i)}
		if _, err := e.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
}

// pulled returns every message of T as queue:offset:body.
func pulled(t *testing.T, e *engine.Engine) []string {
	t.Helper()
	ctx := context.Background()
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	var out []string
	for q := range int32(2) {
		for off := int64(0); ; {
			res, err := e.Pull(ctx, "T", q, off, 32, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range res.Records {
				m, _, err := msg.DecodeStored(rec)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%d:%d:%s", q, m.QueueOffset, m.Body))
			}
			if res.NextOffset == off {
				break
			}
			off = res.NextOffset
		}
	}
	return out
}

func TestStream(t *testing.T) {
	ctx := context.Background()
	master := openEngine(t, engine.Options{})
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	replica := openEngine(t, engine.Options{Replica: true})
	m := NewMaster(MasterOptions{BrokerName: "broker-a", SegmentSize: segSize, Logger: quiet, BatchBytes: 8 << 10})
	addr := serve(t, m, master)
	send(t, master, 100, "before") // some before the replica comes
	r := NewReplica(replica, ReplicaOptions{BrokerName: "broker-a", ID: "r1", SegmentSize: segSize, Logger: quiet})
	follow(t, r, addr)
	send(t, master, 200, "after") // a few segments more
	eventually(t, "the replica holds the master's log", func() bool { return logEnd(replica) == logEnd(master) })
	if want, got := pulled(t, master), pulled(t, replica); len(want) != 300 || !slices.Equal(want, got) {
		t.Fatalf("the replica serves %d messages, the master %d, or they differ", len(got), len(want))
	}
	if !slices.Equal(master.Epochs(), replica.Epochs()) {
		t.Fatalf("epochs %v and %v", master.Epochs(), replica.Epochs())
	}
	eventually(t, "the master sees the replica caught up", func() bool {
		rs := m.Replicas()
		return len(rs) == 1 && rs[0].ID == "r1" && rs[0].Acked == logEnd(master) && rs[0].Lag == 0 && rs[0].InSync
	})
	if r.Lag() != 0 {
		t.Fatalf("replica lag %d", r.Lag())
	}
}

func TestSyncReplication(t *testing.T) {
	ctx := context.Background()
	m := NewMaster(MasterOptions{BrokerName: "broker-a", SegmentSize: segSize, Sync: true, MinInSync: 2, AckTimeout: 2 * time.Second, Logger: quiet})
	master := openEngine(t, engine.Options{Replicator: m})
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	replica := openEngine(t, engine.Options{Replica: true})
	addr := serve(t, m, master)

	// Alone, the master refuses sends, storing nothing.
	end := logEnd(master)
	_, err := master.Send(ctx, &msg.Message{Topic: "T", Body: []byte("alone")})
	if !errors.Is(err, engine.ErrInSyncReplicasNotEnough) || logEnd(master) != end {
		t.Fatalf("a send with no replica: %v (log end %d, was %d); want ErrInSyncReplicasNotEnough and nothing stored", err, logEnd(master), end)
	}

	r := NewReplica(replica, ReplicaOptions{BrokerName: "broker-a", ID: "r1", SegmentSize: segSize, Logger: quiet})
	stop := follow(t, r, addr)
	eventually(t, "the replica is in sync", func() bool { return m.CheckWrite() == nil })
	// Each acknowledged send is held by the replica when it returns.
	for i := range 50 {
		res, err := master.Send(ctx, &msg.Message{Topic: "T", Body: fmt.Appendf(nil, "sync-%d", i)})
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if got := logEnd(replica); got <= res.CommitLogOffset {
			t.Fatalf("send %d acknowledged at %d; the replica's log ends at %d", i, res.CommitLogOffset, got)
		}
	}
	// The replica goes: sends are refused again (or, for one caught in
	// between, not confirmed), never acknowledged.
	stop()
	eventually(t, "the master sees the replica gone", func() bool { return len(m.Replicas()) == 0 })
	end = logEnd(master)
	if _, err := master.Send(ctx, &msg.Message{Topic: "T", Body: []byte("gone")}); !errors.Is(err, engine.ErrInSyncReplicasNotEnough) || logEnd(master) != end {
		t.Fatalf("a send after the replica left: %v", err)
	}
}

// A send whose replica stops acknowledging gets ErrReplicaTimeout, with
// its result: stored on the master, not confirmed.
func TestSyncTimeout(t *testing.T) {
	m := NewMaster(MasterOptions{Sync: true, AckTimeout: 200 * time.Millisecond, Logger: quiet})
	l := &link{id: "silent", acked: 100, caughtUp: time.Now()}
	m.add(l, 100)
	if err := m.CheckWrite(); err != nil {
		t.Fatal(err)
	}
	if err := m.WaitReplicated(context.Background(), 100); err != nil {
		t.Fatalf("held already: %v", err)
	}
	start := time.Now()
	if err := m.WaitReplicated(context.Background(), 200); !errors.Is(err, engine.ErrReplicaTimeout) {
		t.Fatalf("WaitReplicated past the replica: %v, want ErrReplicaTimeout", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %s, before AckTimeout", d)
	}
	go func() { time.Sleep(50 * time.Millisecond); m.ack(l, 200, 200) }()
	if err := m.WaitReplicated(context.Background(), 200); err != nil {
		t.Fatalf("WaitReplicated with the ack arriving: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	master := openEngine(t, engine.Options{})
	if err := master.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	send(t, master, 5, "m")
	m := NewMaster(MasterOptions{BrokerName: "broker-a", SegmentSize: segSize, Logger: quiet})
	addr := serve(t, m, master)
	for _, tc := range []struct {
		name   string
		opts   ReplicaOptions
		setup  func(t *testing.T, e *engine.Engine)
		target error
	}{
		{"another broker group", ReplicaOptions{BrokerName: "broker-b", SegmentSize: segSize}, nil, ErrRefused},
		{"another segment size", ReplicaOptions{BrokerName: "broker-a", SegmentSize: 2 * segSize}, nil, ErrRefused},
		{"a deposed master", ReplicaOptions{BrokerName: "broker-a", SegmentSize: segSize}, func(t *testing.T, e *engine.Engine) {
			// The replica saw epoch 3: the master at epoch 2 is stale.
			frames, _, err := master.ReadFrames(0, nil, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Replicate(epoch.Entry{Epoch: 3, Start: 0}, 0, frames[:0]); err != nil {
				t.Fatal(err)
			}
		}, ErrStaleMaster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replica := openEngine(t, engine.Options{Replica: true})
			if tc.setup != nil {
				tc.setup(t, replica)
			}
			o := tc.opts
			o.Logger = quiet
			err := NewReplica(replica, o).Session(ctx, addr)
			if !errors.Is(err, tc.target) {
				t.Fatalf("Session: %v, want %v", err, tc.target)
			}
			if logEnd(replica) != 0 {
				t.Fatalf("a refused replica copied %d bytes", logEnd(replica))
			}
		})
	}
}

// A returning old master follows its successor: it cuts what only it
// had and copies the rest.
func TestOldMasterReturns(t *testing.T) {
	ctx := context.Background()
	a := openEngine(t, engine.Options{})
	b := openEngine(t, engine.Options{Replica: true})
	if err := a.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ma := NewMaster(MasterOptions{BrokerName: "g", SegmentSize: segSize, Logger: quiet})
	addrA := serve(t, ma, a)
	stop := follow(t, NewReplica(b, ReplicaOptions{BrokerName: "g", ID: "b", SegmentSize: segSize, Logger: quiet}), addrA)
	send(t, a, 60, "a")
	eventually(t, "b holds a's log", func() bool { return logEnd(b) == logEnd(a) })
	stop()
	send(t, a, 40, "lost") // a's last, never copied
	// a fails; b is elected at epoch 2 and takes writes.
	if err := a.Demote(); err != nil {
		t.Fatal(err)
	}
	if err := b.Promote(ctx, 2); err != nil {
		t.Fatal(err)
	}
	send(t, b, 70, "b")
	mb := NewMaster(MasterOptions{BrokerName: "g", SegmentSize: segSize, Logger: quiet})
	addrB := serve(t, mb, b)
	follow(t, NewReplica(a, ReplicaOptions{BrokerName: "g", ID: "a", SegmentSize: segSize, Logger: quiet}), addrB)
	eventually(t, "a holds b's log", func() bool { return logEnd(a) == logEnd(b) })
	if want, got := pulled(t, b), pulled(t, a); len(want) != 130 || !slices.Equal(want, got) {
		t.Fatalf("a serves %d messages, b %d, or they differ", len(got), len(want))
	}
	if !slices.Equal(a.Epochs(), b.Epochs()) {
		t.Fatalf("epochs %v and %v", a.Epochs(), b.Epochs())
	}
}

// Topics, groups and consumer offsets reach the replica within the
// metadata interval, and changes follow.
func TestMetadataReachesReplica(t *testing.T) {
	ctx := context.Background()
	master := openEngine(t, engine.Options{})
	replica := openEngine(t, engine.Options{Replica: true})
	if err := master.Promote(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := master.CreateTopic(meta.Topic{Name: "M", ReadQueues: 3, WriteQueues: 3}); err != nil {
		t.Fatal(err)
	}
	if err := master.CreateGroup(meta.Group{Name: "g", MaxAttempts: 7}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := master.SendToQueue(ctx, &msg.Message{Topic: "M", Body: []byte("x")}, 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := master.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	if err := master.CommitOffset("g", "M", 2, 3); err != nil {
		t.Fatal(err)
	}
	m := NewMaster(MasterOptions{Logger: quiet, MetadataInterval: 50 * time.Millisecond})
	follow(t, NewReplica(replica, ReplicaOptions{Logger: quiet}), serve(t, m, master))
	eventually(t, "the topic, group and offset on the replica", func() bool {
		tp, err1 := replica.Topic("M")
		g, err2 := replica.Group("g")
		off, err3 := replica.ConsumerOffset("g", "M", 2)
		return err1 == nil && tp.ReadQueues == 3 && err2 == nil && g.MaxAttempts == 7 && err3 == nil && off == 3
	})
	if err := master.CommitOffset("g", "M", 2, 5); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new offset on the replica", func() bool {
		off, err := replica.ConsumerOffset("g", "M", 2)
		return err == nil && off == 5
	})
}

// A replica asking from an offset retention deleted is refused, saying
// so; nothing is copied.
func TestRefusesOffsetGone(t *testing.T) {
	master := openEngine(t, engine.Options{})
	send(t, master, 300, "old") // several segments
	if n, err := master.ApplyRetention(time.Now().Add(100 * time.Hour)); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments (%v)", n, err)
	}
	replica := openEngine(t, engine.Options{Replica: true})
	addr := serve(t, NewMaster(MasterOptions{Logger: quiet}), master)
	err := NewReplica(replica, ReplicaOptions{Logger: quiet}).Session(context.Background(), addr)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("Session: %v, want ErrRefused naming retention", err)
	}
	if logEnd(replica) != 0 {
		t.Fatalf("the refused replica copied %d bytes", logEnd(replica))
	}
}

// A peer that acknowledges more than the master wrote is cut off: its
// acknowledgements must never make a sync send look replicated.
func TestAckPastEndClosesLink(t *testing.T) {
	master := openEngine(t, engine.Options{})
	send(t, master, 3, "m")
	m := NewMaster(MasterOptions{Logger: quiet, Sync: true})
	addr := serve(t, m, master)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write := func(msg message) {
		t.Helper()
		if _, err := c.Write(msg.encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	write(message{typ: typeHello, version: Version, replicaID: "liar"})
	if w, _, err := readMessage(c, nil); err != nil || w.typ != typeWelcome {
		t.Fatalf("welcome: %+v, %v", w, err)
	}
	write(message{typ: typeAck, offset: 0})
	eventually(t, "the link counted", func() bool { return len(m.Replicas()) == 1 })
	end := logEnd(master)
	write(message{typ: typeAck, offset: end + 4096})
	eventually(t, "the link dropped", func() bool { return len(m.Replicas()) == 0 })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := readMessage(c, nil); err != nil {
			break // closed by the master
		}
	}
	if err := m.WaitReplicated(context.Background(), end); !errors.Is(err, engine.ErrReplicaTimeout) {
		t.Fatalf("WaitReplicated after the lie: %v, want ErrReplicaTimeout", err)
	}
}

// A master whose lease ran out refuses writes as a replica would, before
// its heartbeat loop notices; an extended lease lets them through again.
func TestLeaseFencesWrites(t *testing.T) {
	m := NewMaster(MasterOptions{Logger: quiet})
	if err := m.CheckWrite(); err != nil {
		t.Fatalf("no lease yet: %v", err)
	}
	m.ExtendLease(time.Now().Add(-time.Millisecond))
	if err := m.CheckWrite(); !errors.Is(err, engine.ErrNotMaster) {
		t.Fatalf("past the lease: %v, want ErrNotMaster", err)
	}
	m.ExtendLease(time.Now().Add(time.Hour))
	if err := m.CheckWrite(); err != nil {
		t.Fatalf("within the lease: %v", err)
	}
}

// Confirmed is the highest offset MinInSync members hold: with two
// replicas and three members required, the lower acknowledgement.
func TestConfirmed(t *testing.T) {
	m := NewMaster(MasterOptions{Sync: true, MinInSync: 3, Logger: quiet})
	if got := m.Confirmed(500); got != 0 {
		t.Fatalf("no replica: confirmed %d, want 0", got)
	}
	m.add(&link{id: "r1", acked: 400}, 500)
	if got := m.Confirmed(500); got != 0 {
		t.Fatalf("one replica of two: confirmed %d, want 0", got)
	}
	m.add(&link{id: "r2", acked: 300}, 500)
	if got := m.Confirmed(500); got != 300 {
		t.Fatalf("confirmed %d, want 300", got)
	}
	async := NewMaster(MasterOptions{Logger: quiet})
	if got := async.Confirmed(500); got != 500 {
		t.Fatalf("async: confirmed %d, want the end", got)
	}
}

// An ack wakes the sends it confirms and only those; with two members
// required of three, a send waits for the second-highest ack; a send
// whose context ends leaves no waiter behind.
func TestWaitReplicatedWakesWhatIsHeld(t *testing.T) {
	m := NewMaster(MasterOptions{Sync: true, MinInSync: 3, AckTimeout: time.Minute, Logger: quiet})
	r1 := &link{id: "r1", caughtUp: time.Now()}
	r2 := &link{id: "r2", caughtUp: time.Now()}
	m.add(r1, 0)
	m.add(r2, 0)
	ends := []int64{100, 200, 300}
	done := make([]chan error, len(ends))
	for i, end := range ends {
		done[i] = make(chan error, 1)
		go func() { done[i] <- m.WaitReplicated(context.Background(), end) }()
	}
	eventually(t, "three sends waiting", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.waiters) == len(ends)
	})
	waiting := func(i int) bool {
		select {
		case err := <-done[i]:
			t.Fatalf("send to %d returned %v before it was held", ends[i], err)
		default:
		}
		return true
	}
	count := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.waiters)
	}
	m.ack(r1, 250, 300) // one replica of the two required
	for i := range ends {
		waiting(i)
	}
	if n := count(); n != len(ends) {
		t.Fatalf("%d waiters left after one replica's ack, want %d", n, len(ends))
	}
	m.ack(r2, 200, 300) // both hold 200: the sends to 100 and 200
	for i := range 2 {
		if err := <-done[i]; err != nil {
			t.Fatalf("send to %d: %v", ends[i], err)
		}
	}
	waiting(2)
	m.mu.Lock()
	left := len(m.waiters)
	m.mu.Unlock()
	if left != 1 {
		t.Fatalf("%d waiters left, want the send to 300", left)
	}
	m.ack(r2, 300, 300) // r1 still at 250
	waiting(2)
	if n := count(); n != 1 {
		t.Fatalf("%d waiters left, want the send to 300", n)
	}
	m.ack(r1, 300, 300)
	if err := <-done[2]; err != nil {
		t.Fatalf("send to 300: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.WaitReplicated(ctx, 400); !errors.Is(err, engine.ErrReplicaTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled send: %v, want ErrReplicaTimeout and context.Canceled", err)
	}
	m.mu.Lock()
	left = len(m.waiters)
	m.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d waiters left after the cancelled send", left)
	}
}

// holdBackLink speaks the replica's side of a session by hand with a
// master serving log and returns the connection, the hello and start
// (offset 0) sent.
func holdBackLink(t *testing.T, m *Master, log *engine.Engine) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", serve(t, m, log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write((&message{typ: typeHello, version: Version, replicaID: "r"}).encode(nil)); err != nil {
		t.Fatal(err)
	}
	if w, _, err := readMessage(c, nil); err != nil || w.typ != typeWelcome {
		t.Fatalf("welcome: %+v, %v", w, err)
	}
	if _, err := c.Write((&message{typ: typeAck, offset: 0}).encode(nil)); err != nil {
		t.Fatal(err)
	}
	return c
}

// nextFrames returns the next transfer that carries records, skipping
// metadata and heartbeats.
func nextFrames(t *testing.T, c net.Conn) *message {
	t.Helper()
	for {
		m, _, err := readMessage(c, nil)
		if err != nil {
			t.Fatalf("read a transfer: %v", err)
		}
		if m.typ == typeTransfer && len(m.frames) > 0 {
			return m
		}
	}
}

// While the replica has not acknowledged a transfer, what is appended
// waits for its acknowledgement and then goes in one transfer; without
// one, it goes after HoldBack all the same.
func TestHoldBack(t *testing.T) {
	master := openEngine(t, engine.Options{})
	send(t, master, 1, "first")
	first := logEnd(master)
	m := NewMaster(MasterOptions{Logger: quiet, HoldBack: time.Hour, Heartbeat: time.Hour})
	c := holdBackLink(t, m, master)
	if tr := nextFrames(t, c); tr.offset != 0 || int64(len(tr.frames)) != first {
		t.Fatalf("first transfer at %d with %d bytes, want 0 and %d", tr.offset, len(tr.frames), first)
	}
	send(t, master, 5, "held")
	end := logEnd(master)
	// Unacknowledged: nothing more comes (a bounded look).
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		tr, _, err := readMessage(c, nil)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read: %v, want the deadline", err)
			}
			break
		}
		if tr.typ == typeTransfer && len(tr.frames) > 0 {
			t.Fatalf("a transfer of %d bytes at %d before the first was acknowledged", len(tr.frames), tr.offset)
		}
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write((&message{typ: typeAck, offset: first}).encode(nil)); err != nil {
		t.Fatal(err)
	}
	if tr := nextFrames(t, c); tr.offset != first || tr.offset+int64(len(tr.frames)) != end {
		t.Fatalf("after the ack: a transfer of [%d, %d), want the five held records [%d, %d) in one", tr.offset, tr.offset+int64(len(tr.frames)), first, end)
	}

	// A replica that does not acknowledge still gets the records once
	// HoldBack passed.
	other := openEngine(t, engine.Options{})
	send(t, other, 1, "first")
	c = holdBackLink(t, NewMaster(MasterOptions{Logger: quiet, HoldBack: 20 * time.Millisecond, Heartbeat: time.Hour}), other)
	nextFrames(t, c)
	at := logEnd(other)
	send(t, other, 1, "second")
	if tr := nextFrames(t, c); tr.offset != at {
		t.Fatalf("unacknowledged: the next transfer at %d, want %d", tr.offset, at)
	}
}

// Each wait ends AckTimeout after it began, whether others wait too or
// the master's one timer had stopped; a wait whose context ends
// leaves the others' deadlines as they were.
func TestWaitReplicatedDeadlines(t *testing.T) {
	const timeout = 150 * time.Millisecond
	m := NewMaster(MasterOptions{Sync: true, AckTimeout: timeout, Logger: quiet})
	m.add(&link{id: "r", caughtUp: time.Now()}, 0)
	waiting := func(n int) func() bool {
		return func() bool { m.mu.Lock(); defer m.mu.Unlock(); return len(m.waiters) == n }
	}
	type result struct {
		err  error
		took time.Duration
	}
	wait := func(ctx context.Context, end int64) <-chan result {
		ch := make(chan result, 1)
		start := time.Now()
		go func() {
			err := m.WaitReplicated(ctx, end)
			ch <- result{err, time.Since(start)}
		}()
		return ch
	}
	recv := func(ch <-chan result) result {
		t.Helper()
		select {
		case r := <-ch:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("a wait never ended")
			return result{}
		}
	}
	for round := range 2 { // the second after the timer stopped
		a := wait(context.Background(), 100)
		eventually(t, "a waiting", waiting(1))
		ctx, cancel := context.WithCancel(context.Background())
		c := wait(ctx, 50)
		eventually(t, "c waiting", waiting(2))
		b := wait(context.Background(), 200)
		eventually(t, "b waiting", waiting(3))
		cancel()
		if r := recv(c); !errors.Is(r.err, engine.ErrReplicaTimeout) || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("round %d: cancelled wait: %v", round, r.err)
		}
		for name, ch := range map[string]<-chan result{"a": a, "b": b} {
			r := recv(ch)
			if !errors.Is(r.err, engine.ErrReplicaTimeout) || r.took < timeout {
				t.Fatalf("round %d: wait %s ended after %s with %v, want ErrReplicaTimeout after %s", round, name, r.took, r.err, timeout)
			}
		}
		eventually(t, "no waiter left", waiting(0))
	}
}

// A replica that acknowledged everything sent is not held back when the
// stream moves on to the next segment (the segment's unused end is
// never sent, nor acknowledged).
func TestHoldBackAcrossSegments(t *testing.T) {
	master := openEngine(t, engine.Options{})
	send(t, master, 1, "first")
	c := holdBackLink(t, NewMaster(MasterOptions{Logger: quiet, HoldBack: time.Hour, Heartbeat: time.Hour}), master)
	send(t, master, 200, "more") // a few segments
	end := logEnd(master)
	segments := 0
	for at := int64(0); at < end; {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		tr := nextFrames(t, c) // fails after the deadline: held back
		if tr.offset != at && tr.offset%segSize == 0 {
			segments++
		}
		at = tr.offset + int64(len(tr.frames))
		if _, err := c.Write((&message{typ: typeAck, offset: at}).encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if segments < 2 {
		t.Fatalf("the stream crossed %d segment boundaries, want at least 2", segments)
	}
}
