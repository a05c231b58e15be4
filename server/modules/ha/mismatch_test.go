package ha_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/server"
)

// fakeController answers every request with one group record, or with
// one refusal, and counts the answers.
type fakeController struct {
	record  controller.Group
	refusal string // a JSON refusal, sent with status 409 when set
	answers atomic.Int64
}

func (f *fakeController) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if r.URL.Path == "/v1/watch" {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if f.refusal != "" {
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, f.refusal)
	} else {
		json.NewEncoder(w).Encode(f.record)
	}
	f.answers.Add(1)
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A broker that the controller's answers do not fit — a record of
// another cluster or group than the broker's, or a registration refused
// as a mismatch — stays a replica: it logs the error, refuses sends with
// ErrNotMaster and writes nothing to its log.
func TestControlledRefusesMismatchedRecord(t *testing.T) {
	me := controller.Member{BrokerID: 1, Addr: "127.0.0.1:1", HAAddr: "127.0.0.1:2"}
	record := func(cluster, name string) controller.Group {
		return controller.Group{Cluster: cluster, Name: name, Members: map[int64]controller.Member{1: me},
			MasterID: 1, MasterEpoch: 1, SyncStateSet: []int64{1}, SyncStateSetEpoch: 1}
	}
	for _, tc := range []struct {
		name    string
		fake    *fakeController
		logged  string
		control bool // the record fits: the broker becomes master
	}{
		{"the broker's own record", &fakeController{record: record("C", "broker-a")}, "", true},
		{"another cluster's record", &fakeController{record: record("D", "broker-a")}, "not this broker's group", false},
		{"another group's record", &fakeController{record: record("C", "broker-z")}, "not this broker's group", false},
		{"registration refused", &fakeController{refusal: `{"error":"controller: broker group and cluster do not match: group broker-a belongs to cluster D, not C","code":"mismatch"}`},
			"refuses this broker's registration", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: tc.fake}
			go hs.Serve(ln)
			defer hs.Close()
			var logs syncBuffer
			opts, err := server.NewOptions()
			if err != nil {
				t.Fatal(err)
			}
			opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			args := []string{"--data", t.TempDir(), "--segment-size", "64MiB", "--http-addr", "off", "--namesrv-addr", "off",
				"--broker-addr", "127.0.0.1:0", "--grpc-addr", "off", "--mqtt-addr", "off", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off",
				"--broker-name", "broker-a", "--broker-cluster", "C",
				"--ha-controller", ln.Addr().String(), "--ha-broker-id", "1", "--ha-addr", "127.0.0.1:0", "--ha-heartbeat-interval", "50ms"}
			if err := opts.Flags.Parse(args); err != nil {
				t.Fatal(err)
			}
			srv, err := server.New(*opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer srv.Stop(context.Background())
			eng := srv.Engine()
			if tc.control {
				eventually(t, "the broker master on its own record", func() bool { return eng.Role() == engine.RoleMaster })
				return
			}
			// Several answers after the first: had the broker acted on
			// one, it would be master by now.
			eventually(t, "answers from the controller", func() bool { return tc.fake.answers.Load() >= 5 })
			if !strings.Contains(logs.String(), tc.logged) {
				t.Fatalf("log lacks %q:\n%s", tc.logged, logs.String())
			}
			if n := strings.Count(logs.String(), tc.logged); n != 1 {
				t.Fatalf("the error is logged %d times, want once", n)
			}
			if eng.Role() != engine.RoleReplica || len(eng.Epochs()) != 0 {
				t.Fatalf("role %v, epochs %v: the broker acted on the controller's answer", eng.Role(), eng.Epochs())
			}
			if err := eng.CreateTopic(meta.Topic{Name: "T", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
				t.Fatal(err)
			}
			if _, err := eng.Send(context.Background(), &message.Message{Topic: "T", Body: []byte("x")}); !errors.Is(err, engine.ErrNotMaster) {
				t.Fatalf("send: %v, want ErrNotMaster", err)
			}
			if _, end := eng.LogRange(); end != 0 {
				t.Fatalf("the log ends at %d, want nothing written", end)
			}
		})
	}
}
