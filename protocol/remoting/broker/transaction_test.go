package broker

import (
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// sendHalf sends a transactional half message and returns the send
// response header.
func (h *harness) sendHalf(p *peer.Peer, topic, body, id string) wire.SendMessageResponseHeader {
	h.t.Helper()
	sh := sendHeader(topic, 0, props("TRAN_MSG", "true", "PGROUP", "pg", "UNIQ_KEY", id))
	sh.SysFlag = message.SysFlagTransactionPrepared
	resp := invoke(h.t, p, request(wire.SendMessage, sh, []byte(body)))
	wantCode(h.t, resp, wire.Success)
	var rh wire.SendMessageResponseHeader
	if err := resp.DecodeHeader(&rh); err != nil {
		h.t.Fatal(err)
	}
	return rh
}

func endTransaction(t *testing.T, p *peer.Peer, rh wire.SendMessageResponseHeader, id string, decision int32, fromCheck bool) *wire.Command {
	t.Helper()
	_, off, err := message.ParseOffsetID(rh.MsgID)
	if err != nil {
		t.Fatal(err)
	}
	return invoke(t, p, request(wire.EndTransaction, &wire.EndTransactionRequestHeader{
		ProducerGroup: "pg", TranStateTableOffset: rh.QueueOffset, CommitLogOffset: off,
		CommitOrRollback: decision, FromTransactionCheck: fromCheck, MsgID: id, TransactionID: rh.TransactionID,
	}, nil))
}

func TestTransactionCommitAndRollback(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicX", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	commit := h.sendHalf(p, "TopicX", "commit me", "tx-1")
	rollback := h.sendHalf(p, "TopicX", "roll me back", "tx-2")
	if commit.TransactionID != "tx-1" {
		t.Fatalf("transactionId %q", commit.TransactionID)
	}
	wantCode(t, h.pull(p, pullHeader("g", "TopicX", 0, 0)), wire.PullNotFound)

	wantCode(t, endTransaction(t, p, commit, "tx-1", wire.TransactionCommitType, false), wire.Success)
	wantCode(t, endTransaction(t, p, rollback, "tx-2", wire.TransactionRollbackType, false), wire.Success)
	resp := h.pull(p, pullHeader("g", "TopicX", 0, 0))
	wantCode(t, resp, wire.Success)
	msgs := records(t, resp.Body)
	if len(msgs) != 1 || string(msgs[0].Body) != "commit me" || msgs[0].UniqKey() != "tx-1" || msgs[0].IsTransactionPrepared() {
		t.Fatalf("committed %+v", msgs)
	}
	// A second decision on the same half message is refused.
	wantCode(t, endTransaction(t, p, commit, "tx-1", wire.TransactionCommitType, false), wire.TransactionFailed)
	// A half message cannot travel in a batch.
	sh := sendHeader("TopicX", 0, "")
	body, _ := wire.AppendBatch(nil, []wire.BatchEntry{{Body: []byte("x"), Properties: props("TRAN_MSG", "true", "PGROUP", "pg")}})
	wantCode(t, invoke(t, p, request(wire.SendBatchMessage, sh, body)), wire.MessageIllegal)
}

// An undecided half message is checked: the broker asks a producer of
// its group, on the producer's connection, which then commits it.
func TestTransactionCheck(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true, TransactionTimeout: 10 * time.Millisecond, TransactionScanInterval: 10 * time.Millisecond, TransactionCheckInterval: time.Minute},
		broker: Options{BrokerName: "b1", AutoCreateGroups: true},
	})
	checks := make(recorder, 4)
	producer := h.dial(checks)
	heartbeat(t, producer, "producer@1", "pg", "", "")
	half := h.sendHalf(producer, "TopicX", "decide later", "tx-9")
	wantCode(t, endTransaction(t, producer, half, "tx-9", wire.TransactionNotType, false), wire.Success)

	req := checks.next(t, wire.CheckTransactionState)
	var ch wire.CheckTransactionStateRequestHeader
	if err := req.DecodeHeader(&ch); err != nil {
		t.Fatal(err)
	}
	_, off, _ := message.ParseOffsetID(half.MsgID)
	if ch.CommitLogOffset != off || ch.TranStateTableOffset != half.QueueOffset || ch.MsgID != "tx-9" || ch.OffsetMsgID != half.MsgID || ch.BrokerName != "b1" || ch.Topic != "TopicX" {
		t.Fatalf("check header %+v, half %+v", ch, half)
	}
	m, _, err := message.DecodeStored(req.Body)
	if err != nil || m.Topic != "TopicX" || m.Properties["PGROUP"] != "pg" || string(m.Body) != "decide later" {
		t.Fatalf("check body %+v, %v", m, err)
	}
	wantCode(t, endTransaction(t, producer, half, "tx-9", wire.TransactionCommitType, true), wire.Success)
	resp := h.pull(producer, pullHeader("g", "TopicX", 0, 0))
	wantCode(t, resp, wire.Success)
}
