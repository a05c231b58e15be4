package server

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// end sends EndTransaction and returns its status.
func (e *pubEnv) end(topic, msgID, txID string, res rmqpb.TransactionResolution, src rmqpb.TransactionSource) *rmqpb.Status {
	e.t.Helper()
	resp, err := e.cli.EndTransaction(e.as("producer@1"), &rmqpb.EndTransactionRequest{
		Topic: &rmqpb.Resource{Name: topic}, MessageId: msgID, TransactionId: txID, Resolution: res, Source: src,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.GetStatus()
}

func TestTransactionCommitAndRollback(t *testing.T) {
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true, TransactionTimeout: time.Hour}, Options{AutoCreateTopics: true})
	if err := e.eng.CreateTopic(meta.Topic{Name: "TX", ReadQueues: 2, WriteQueues: 2, MessageType: meta.MessageTypeTransaction}); err != nil {
		t.Fatal(err)
	}
	commit := e.send(e.tx("TX", "commit me"))
	rollback := e.send(e.tx("TX", "roll me back"))
	byID := e.send(e.tx("TX", "committed by message id"))
	for _, ent := range []*rmqpb.SendResultEntry{commit, rollback, byID} {
		if ent.GetTransactionId() == "" {
			t.Fatalf("no transaction id: %v", ent)
		}
	}
	if got := e.visible("TX"); len(got) != 0 {
		t.Fatalf("half messages visible: %v", got)
	}

	e.want(e.end("TX", commit.GetMessageId(), commit.GetTransactionId(), rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_OK)
	e.want(e.end("TX", rollback.GetMessageId(), rollback.GetTransactionId(), rmqpb.TransactionResolution_ROLLBACK, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_OK)
	// A transaction id this server did not issue: the message id finds
	// the half message (RocketMQ's proxy issues message ids).
	e.want(e.end("TX", byID.GetMessageId(), "not-an-offset-id", rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_OK)

	got := e.visible("TX")
	if len(got) != 2 {
		t.Fatalf("%d messages visible after commit, want 2", len(got))
	}
	for _, m := range got {
		if !strings.HasPrefix(string(m.Body), "commit") || m.IsTransactionPrepared() {
			t.Fatalf("visible %q, properties %v", m.Body, m.Properties)
		}
	}

	// Resolved transactions, unknown ones, and those of another topic are
	// INVALID_TRANSACTION_ID.
	e.want(e.end("TX", commit.GetMessageId(), commit.GetTransactionId(), rmqpb.TransactionResolution_ROLLBACK, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_INVALID_TRANSACTION_ID)
	st := e.end("TX", rollback.GetMessageId(), rollback.GetTransactionId(), rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_CLIENT)
	e.want(st, rmqpb.Code_INVALID_TRANSACTION_ID)
	if !strings.Contains(st.GetMessage(), "resolved") {
		t.Errorf("message %q does not say the transaction is resolved", st.GetMessage())
	}
	e.want(e.end("TX", "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "", rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_INVALID_TRANSACTION_ID)
	pending := e.send(e.tx("TX", "pending"))
	e.want(e.end("Other", pending.GetMessageId(), pending.GetTransactionId(), rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_INVALID_TRANSACTION_ID)
	// An unspecified resolution leaves the transaction pending.
	e.want(e.end("TX", pending.GetMessageId(), pending.GetTransactionId(), rmqpb.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_OK)
	e.want(e.end("TX", pending.GetMessageId(), pending.GetTransactionId(), rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_CLIENT), rmqpb.Code_OK)
}

// A producer that stays silent about a transaction is asked on its
// telemetry stream, and its answer resolves the transaction.
func TestOrphanedTransactionCheck(t *testing.T) {
	e := newPubEnv(t, engine.Options{
		AutoCreateTopics:         true,
		TransactionTimeout:       20 * time.Millisecond,
		TransactionScanInterval:  10 * time.Millisecond,
		TransactionCheckInterval: time.Hour,
	}, Options{AutoCreateTopics: true})
	stream := e.producer("producer@1", "TX")
	sent := e.send(e.tx("TX", "decide later"))

	cmd, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	rc := cmd.GetRecoverOrphanedTransactionCommand()
	if rc == nil {
		t.Fatalf("got %v, want a RecoverOrphanedTransactionCommand", cmd)
	}
	m := rc.GetMessage()
	sum := md5.Sum([]byte("decide later"))
	sp := m.GetSystemProperties()
	if m.GetTopic().GetName() != "TX" || sp.GetMessageId() != sent.GetMessageId() || string(m.GetBody()) != "decide later" ||
		sp.GetBodyDigest().GetType() != rmqpb.DigestType_MD5 || sp.GetBodyDigest().GetChecksum() != strings.ToUpper(hex.EncodeToString(sum[:])) ||
		sp.GetMessageType() != rmqpb.MessageType_TRANSACTION {
		t.Fatalf("check message %v", m)
	}
	if rc.GetTransactionId() != sent.GetTransactionId() {
		t.Fatalf("check transaction id %q, send gave %q", rc.GetTransactionId(), sent.GetTransactionId())
	}

	// The producer answers as the Node.js client does.
	e.want(e.end(m.GetTopic().GetName(), sp.GetMessageId(), rc.GetTransactionId(), rmqpb.TransactionResolution_COMMIT, rmqpb.TransactionSource_SOURCE_SERVER_CHECK), rmqpb.Code_OK)
	if got := e.visible("TX"); len(got) != 1 || string(got[0].Body) != "decide later" {
		t.Fatalf("visible after the check: %v", got)
	}
}

// When the producer the engine picks has no telemetry stream, another
// producer of the topic is asked.
func TestOrphanedTransactionCheckFindsAStream(t *testing.T) {
	e := newPubEnv(t, engine.Options{
		AutoCreateTopics:         true,
		TransactionTimeout:       20 * time.Millisecond,
		TransactionScanInterval:  10 * time.Millisecond,
		TransactionCheckInterval: 50 * time.Millisecond,
	}, Options{AutoCreateTopics: true})
	gone := e.producer("producer@gone", "TX")
	if err := gone.CloseSend(); err != nil {
		t.Fatal(err)
	}
	sess, _ := e.srv.sessions.Lookup("producer@gone")
	e.eventually("the stream ends", func() bool { return !sess.HasStream() })
	live := e.producer("producer@live", "TX")
	sent := e.send(e.tx("TX", "x"))
	for {
		cmd, err := live.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if rc := cmd.GetRecoverOrphanedTransactionCommand(); rc != nil {
			if rc.GetMessage().GetSystemProperties().GetMessageId() != sent.GetMessageId() {
				t.Fatalf("check of %v", rc.GetMessage())
			}
			break
		}
	}
	e.want(e.end("TX", sent.GetMessageId(), sent.GetTransactionId(), rmqpb.TransactionResolution_ROLLBACK, rmqpb.TransactionSource_SOURCE_SERVER_CHECK), rmqpb.Code_OK)
}
