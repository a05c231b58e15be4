package karmancmd

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/server"
)

// runAdmin runs "karman admin args..." in-process and returns its
// standard output, standard error and error.
func runAdmin(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := New(&server.Registry{})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"admin"}, args...))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// TestAdminArgs checks arguments that are refused before anything is
// sent: the name server address points nowhere, so a command that got
// past its arguments would fail differently.
func TestAdminArgs(t *testing.T) {
	const nowhere = "--namesrv=127.0.0.1:1"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{nowhere, "topic", "create", "t", "--queues", "0"}, "--queues 0: want at least 1"},
		{[]string{nowhere, "topic", "create", "t", "--type", "ordered"}, `--type: unknown message type "ordered"`},
		{[]string{nowhere, "topic", "create", "t", "--perm", "x"}, `--perm: unknown permission "x"`},
		{[]string{nowhere, "topic", "create"}, "accepts 1 arg(s), received 0"},
		{[]string{nowhere, "topic", "update", "t", "--queues", "-2"}, "--queues -2: want at least 1"},
		{[]string{nowhere, "group", "create", "g", "--max-attempts", "0"}, "--max-attempts 0: want at least 1"},
		{[]string{nowhere, "group", "update", "g", "--max-attempts", "-1"}, "--max-attempts -1: want at least 1"},
		{[]string{nowhere, "offset", "reset", "g", "t"}, "--to-time is required"},
		{[]string{nowhere, "offset", "reset", "g", "t", "--to-time", "yesterday"}, `--to-time: time "yesterday"`},
		{[]string{nowhere, "offset", "reset", "g"}, "accepts 2 arg(s), received 1"},
		{[]string{nowhere, "message", "query", "t", "k", "--begin", "-1q"}, `--begin: time "-1q"`},
		{[]string{nowhere, "message", "query", "t", "k", "--end", "x"}, `--end: time "x"`},
		{[]string{nowhere, "message", "query", "t", "k", "--max", "0"}, "--max 0: want at least 1"},
		{[]string{nowhere, "message", "consume", "id"}, "--group is required"},
		{[]string{nowhere, "cluster", "wipe-write"}, "accepts 1 arg(s), received 0"},
		{[]string{nowhere, "--timeout", "0s", "cluster", "list"}, "--timeout must be positive"},
		{[]string{"--namesrv", "9876", "cluster", "list"}, `--namesrv: address "9876": want host:port`},
		{[]string{"--namesrv", " ; ", "cluster", "list"}, "--namesrv: no address"},
		{[]string{nowhere, "cluster", "list"}, "cannot reach name server 127.0.0.1:1: dial tcp 127.0.0.1:1: connect:"},
		{[]string{nowhere, "dlq", "resend", "%bad group", "id"}, `group "%bad group" contains ' '`},
	}
	for _, tt := range tests {
		_, stderr, err := runAdmin(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("admin %q: error %v, want one containing %q", tt.args, err, tt.want)
			continue
		}
		if !strings.Contains(stderr, "Error: ") {
			t.Errorf("admin %q: stderr %q lacks the error", tt.args, stderr)
		}
	}
}

func TestAdminHelp(t *testing.T) {
	out, _, err := runAdmin(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster", "topic", "group", "offset", "message", "dlq", "--namesrv", "--json", "--timeout"} {
		if !strings.Contains(out, want) {
			t.Errorf("admin --help lacks %q:\n%s", want, out)
		}
	}
	t.Setenv(namesrvEnv, "10.1.2.3:9876")
	if out, _, _ = runAdmin(t, "--help"); !strings.Contains(out, "10.1.2.3:9876") {
		t.Errorf("--namesrv does not default to %s:\n%s", namesrvEnv, out)
	}
}

func TestFormatMillis(t *testing.T) {
	if got := formatMillis(0); got != "-" {
		t.Errorf("formatMillis(0) = %q", got)
	}
	ms := time.Date(2024, 5, 1, 12, 0, 0, 250e6, time.Local).UnixMilli()
	if got, want := formatMillis(ms), time.UnixMilli(ms).Format("2006-01-02T15:04:05.000Z07:00"); got != want || !strings.Contains(got, "12:00:00.250") {
		t.Errorf("formatMillis = %q, want %q", got, want)
	}
}

func TestPrintJSON(t *testing.T) {
	var buf bytes.Buffer
	f := &adminFlags{json: true}
	v := &brokerList{Brokers: []brokerWithStatus{{Broker: admin.Broker{Cluster: "c", Name: "b<1>", ID: 0, Addr: "127.0.0.1:10911"}}}}
	if err := f.print(&buf, v, nil); err != nil {
		t.Fatal(err)
	}
	want := `{
  "brokers": [
    {
      "cluster": "c",
      "brokerName": "b<1>",
      "brokerId": 0,
      "address": "127.0.0.1:10911",
      "status": null
    }
  ]
}
`
	if buf.String() != want {
		t.Errorf("JSON:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestTextOutput(t *testing.T) {
	var buf bytes.Buffer
	f := &adminFlags{}
	d := &admin.TopicDescription{
		Topic: "orders", Type: "FIFO", Attributes: map[string]string{"message.type": "FIFO", "a": "b"}, Messages: 12, ConsumerGroups: []string{"billing", "shipping"},
		Brokers: []admin.TopicBroker{{Cluster: "DefaultCluster", BrokerName: "broker-a", Address: "127.0.0.1:10911", ReadQueues: 2, WriteQueues: 2, Perm: "rw"}},
		Queues: []admin.QueueOffsets{
			{BrokerName: "broker-a", QueueID: 0, MinOffset: 0, MaxOffset: 5},
			{BrokerName: "broker-a", QueueID: 1, MinOffset: 3, MaxOffset: 10},
		},
	}
	if err := f.print(&buf, d, func(w io.Writer, v any) { writeTopicDescription(w, v.(*admin.TopicDescription)) }); err != nil {
		t.Fatal(err)
	}
	want := `topic:        orders
type:         FIFO
attributes:   a=b message.type=FIFO
messages:     12
consumed by:  billing shipping

BROKER    CLUSTER         ADDRESS          READ  WRITE  PERM
broker-a  DefaultCluster  127.0.0.1:10911  2     2      rw

BROKER    QUEUE  MIN  MAX  LAST STORED
broker-a  0      0    5    -
broker-a  1      3    10   -
`
	if buf.String() != want {
		t.Errorf("topic describe:\n%s\nwant:\n%s", buf.String(), want)
	}

	buf.Reset()
	g := &admin.GroupDescription{
		Group:  "billing",
		Config: &admin.GroupInfo{Group: "billing", FIFO: true, MaxAttempts: 5, ConsumeEnabled: true, Brokers: []string{"broker-a"}},
		Online: true, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
		Members:       []admin.Member{{ClientID: "10.0.0.1@1", ClientAddr: "10.0.0.1:5000", Language: "GO", Version: 317, Brokers: []string{"broker-a"}}},
		Subscriptions: []admin.Subscription{{Topic: "orders", ExpressionType: "TAG", Expression: "*"}},
		Queues:        []admin.QueueLag{{Topic: "orders", BrokerName: "broker-a", QueueID: 0, BrokerOffset: 10, ConsumerOffset: 4, Lag: 6}},
		TotalLag:      6,
	}
	if err := f.print(&buf, g, func(w io.Writer, v any) { writeGroupDescription(w, v.(*admin.GroupDescription)) }); err != nil {
		t.Fatal(err)
	}
	want = `group:      billing
settings:   FIFO, clustering, max attempts 5, consuming
brokers:    broker-a
online:     yes, 1 member(s), CONSUME_PASSIVELY, CLUSTERING, CONSUME_FROM_LAST_OFFSET
total lag:  6

MEMBER      ADDRESS        LANGUAGE  VERSION  BROKERS
10.0.0.1@1  10.0.0.1:5000  GO        317      broker-a

TOPIC   TYPE  EXPRESSION
orders  TAG   *

TOPIC   BROKER    QUEUE  BROKER OFFSET  CONSUMER OFFSET  LAG  LAST CONSUMED
orders  broker-a  0      10             4                6    -
`
	if buf.String() != want {
		t.Errorf("group describe:\n%s\nwant:\n%s", buf.String(), want)
	}

	buf.Reset()
	m := &admin.Message{
		MsgID: "U1", OffsetMsgID: "O1", Topic: "orders", BrokerName: "broker-a", QueueID: 1, QueueOffset: 2, CommitLogOffset: 300,
		Tags: "t", Keys: []string{"k1", "k2"}, BornHost: "10.0.0.1:5000", StoreHost: "127.0.0.1:10911",
		Properties: map[string]string{"UNIQ_KEY": "U1", "KEYS": "k1 k2"}, BodySize: 5, Body: "hello", BodyEncoding: admin.BodyUTF8,
	}
	if err := f.print(&buf, m, func(w io.Writer, v any) { writeMessage(w, v.(*admin.Message)) }); err != nil {
		t.Fatal(err)
	}
	want = `msgId:              U1
offsetMsgId:        O1
topic:              orders
broker:             broker-a
queue:              1
queue offset:       2
commit-log offset:  300
tags:               t
keys:               k1 k2
born:               - from 10.0.0.1:5000
stored:             - on 127.0.0.1:10911
reconsume times:    0
sysFlag, flag:      0x0, 0
property:           KEYS=k1 k2
property:           UNIQ_KEY=U1
body:               5 bytes (utf-8)

hello
`
	if buf.String() != want {
		t.Errorf("message get:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestReplicationColumns(t *testing.T) {
	lag := int64(4096)
	for _, tc := range []struct {
		name string
		r    *admin.Replication
		want [4]string
	}{
		{"single broker", nil, [4]string{"master", "-", "-", "-"}},
		{"controlled master", &admin.Replication{Role: "master", BrokerID: "1", Controlled: true, MasterEpoch: 3, InSync: []string{"1", "2"},
			ReplicaLagBytes: map[string]int64{"3": 100, "2": 0}}, [4]string{"master(1)", "3", "1,2", "2:0,3:100"}},
		{"replica", &admin.Replication{Role: "replica", BrokerID: "2", MasterEpoch: 3, LagBytes: &lag}, [4]string{"replica(2)", "3", "-", "4096"}},
		{"master without replicas", &admin.Replication{Role: "master", MasterEpoch: 1, InSync: []string{"0"}}, [4]string{"master", "1", "0", "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role, epoch, inSync, lag := replicationColumns(tc.r)
			if got := [4]string{role, epoch, inSync, lag}; got != tc.want {
				t.Errorf("replicationColumns = %q, want %q", got, tc.want)
			}
		})
	}
}
