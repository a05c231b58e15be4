package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
)

// The test binary doubles as the idle worker process.
func TestMain(m *testing.M) {
	if spec := os.Getenv("KARMAN_BENCH_MQTT_WORKER"); spec != "" {
		var w IdleWorker
		fmt.Sscanf(spec, "%s %d %s %d", &w.Addr, &w.Count, &w.LocalIP, &w.Version)
		w.Prefix = "test-idle-" + strconv.Itoa(os.Getpid())
		if err := RunIdleWorker(context.Background(), w, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func startPeer(t *testing.T) Target {
	t.Helper()
	m, err := StartMosquitto(context.Background())
	if errors.Is(err, ErrNoMosquitto) {
		t.Skip("mosquitto is not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Stop() })
	return Target{System: "mosquitto", Addr: m.Addr, PID: m.PID()}
}

func small() Options {
	o := Options{Count: 2000, Pairs: 4, FanoutSubscribers: 20, FanoutCount: 50, SharedPublishers: 10,
		SharedSubscribers: 2, QoS: 1, DrainTimeout: 2 * time.Second, Timeout: 30 * time.Second}
	o.EnsureDefaults()
	return o
}

func checkFlow(t *testing.T, r Result, err error, phase string, delivered int64, lossless bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", phase, err)
	}
	t.Logf("%+v", r)
	if r.Phase != phase || r.System != "mosquitto" || r.MsgsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.RSSMB <= 0 {
		t.Errorf("%s: implausible result %+v", phase, r)
	}
	if lossless && (r.Delivered != delivered || r.Lost != 0) {
		t.Errorf("%s: delivered %d of %d", phase, r.Delivered, delivered)
	}
	if r.Delivered > delivered {
		t.Errorf("%s: %d deliveries, more than the %d expected", phase, r.Delivered, delivered)
	}
}

// TestShapesAgainstMosquitto runs every shape, small, against a real
// mosquitto: QoS 1 flows must deliver everything.
func TestShapesAgainstMosquitto(t *testing.T) {
	tg := startPeer(t)
	o := small()
	ctx := context.Background()
	r, err := P2P(ctx, tg, o, 0)
	checkFlow(t, r, err, PhaseP2PQoS0, o.Count, false)
	r, err = P2P(ctx, tg, o, 1)
	checkFlow(t, r, err, PhaseP2PQoS1, o.Count, true)
	r, err = Fanout(ctx, tg, o)
	checkFlow(t, r, err, PhaseFanout, o.FanoutCount*int64(o.FanoutSubscribers), true)
	r, err = Shared(ctx, tg, o)
	checkFlow(t, r, err, PhaseShared, o.Count, true)
	if r.Subscribers != 2 || r.Publishers != 10 {
		t.Errorf("shared shape %+v", r)
	}
	o.Version = packet.Version311
	r, err = P2P(ctx, tg, o, 1)
	checkFlow(t, r, err, PhaseP2PQoS1, o.Count, true)
}

// TestIdleAgainstMosquitto spreads idle connections over worker processes
// and source addresses, and checks the broker holds all of them.
func TestIdleAgainstMosquitto(t *testing.T) {
	tg := startPeer(t)
	o := small()
	o.Connections, o.PerProcess = 120, 50
	r, err := Idle(context.Background(), tg, o, func(w IdleWorker) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("KARMAN_BENCH_MQTT_WORKER=%s %d %s %d", w.Addr, w.Count, w.LocalIP, w.Version))
		return cmd
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Phase != PhaseIdle || r.Connections != 120 || r.MsgsPerSec <= 0 || r.P99us <= 0 || r.RSSMB <= 0 {
		t.Fatalf("implausible %+v", r)
	}
}

// TestDialRefused checks that a CONNACK refusal is an ErrRefused error:
// a listener answers every CONNECT with "not authorized".
func TestDialRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		d := packet.NewDecoder(c)
		if _, err := d.Read(); err != nil {
			return
		}
		packet.Encode(c, &packet.Connack{ReasonCode: packet.NotAuthorized}, d.Version)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Dial(ctx, l.Addr().String(), DialOptions{ClientID: "x"})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v", err)
	}
	if err := (&Options{Size: 4}).Validate(); err == nil {
		t.Fatal("size 4 accepted")
	}
}

// TestLossCounted checks that a phase whose deliveries never come ends
// after the drain timeout and reports them lost: the subscriber listens
// on another topic than the publisher's.
func TestLossCounted(t *testing.T) {
	tg := startPeer(t)
	o := small()
	o.DrainTimeout = 300 * time.Millisecond
	f := &flow{phase: "loss", qos: 1, pubTopics: []string{"bench/loss/a"}, perPub: []int64{50},
		subFilters: []string{"bench/loss/b"}, expected: 50}
	start := time.Now()
	r, err := f.run(context.Background(), tg, &o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivered != 0 || r.Lost != 50 || r.Published != 50 || r.MsgsPerSec != 0 {
		t.Fatalf("%+v", r)
	}
	if el := time.Since(start); el < o.DrainTimeout {
		t.Fatalf("ended after %v, before the drain timeout", el)
	}
}
