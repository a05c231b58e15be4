package broker

import (
	"bytes"
	"compress/zlib"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func TestSendAndPull(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	resp := h.send(p, "TopicA", 1, "hello", "TAGS", "t1", "KEYS", "k1 k2", "UNIQ_KEY", "AbCdEf0123")

	var rh wire.SendMessageResponseHeader
	if err := resp.DecodeHeader(&rh); err != nil {
		t.Fatal(err)
	}
	host, clOffset, err := message.ParseOffsetID(rh.MsgID)
	if err != nil || len(rh.MsgID) != 32 {
		t.Fatalf("msgId %q: %v", rh.MsgID, err)
	}
	if rh.QueueID != 1 || rh.QueueOffset != 0 || rh.TransactionID != "AbCdEf0123" || rh.MsgRegion == "" || rh.TraceOn != "true" {
		t.Fatalf("send response header %+v", rh)
	}
	for k, v := range resp.ExtFields {
		if v == "" {
			t.Errorf("empty extField %s", k)
		}
	}

	pr := h.pull(p, pullHeader("g", "TopicA", 1, 0))
	wantCode(t, pr, wire.Success)
	if ext(t, pr, "nextBeginOffset") != 1 || ext(t, pr, "maxOffset") != 1 || ext(t, pr, "minOffset") != 0 || ext(t, pr, "suggestWhichBrokerId") != 0 {
		t.Fatalf("pull extFields %v", pr.ExtFields)
	}
	msgs := records(t, pr.Body)
	if len(msgs) != 1 {
		t.Fatalf("%d records", len(msgs))
	}
	m := msgs[0]
	if string(m.Body) != "hello" || m.Tags() != "t1" || m.UniqKey() != "AbCdEf0123" || m.Properties[message.PropertyCluster] != DefaultClusterName {
		t.Fatalf("pulled %+v", m)
	}
	if m.CommitLogOffset != clOffset || m.StoreHost != host {
		t.Fatalf("record at %d on %v, msgId says %d on %v", m.CommitLogOffset, m.StoreHost, clOffset, host)
	}
	local := netip.MustParseAddrPort(p.Addr()) // the broker's address; the born host is ours
	if m.BornHost.Addr() != local.Addr() || m.BornHost.Port() == 0 || m.BornHost.Port() == local.Port() {
		t.Fatalf("born host %v, broker at %v", m.BornHost, local)
	}
}

// A zlib body (sysFlag bit 0) is stored and served as sent.
func TestSendCompressedBodyKept(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, 5)
	w.Write(bytes.Repeat([]byte("karman "), 1000))
	w.Close()
	sh := sendHeader("TopicZ", 0, props())
	sh.SysFlag = message.SysFlagCompressed
	wantCode(t, invoke(t, p, request(wire.SendMessage, sh, z.Bytes())), wire.Success)

	pr := h.pull(p, pullHeader("g", "TopicZ", 0, 0))
	wantCode(t, pr, wire.Success)
	m := records(t, pr.Body)[0]
	if m.SysFlag&message.SysFlagCompressed == 0 || !bytes.Equal(m.Body, z.Bytes()) {
		t.Fatalf("sysFlag %#x, body changed: %v", m.SysFlag, !bytes.Equal(m.Body, z.Bytes()))
	}
}

func TestSendBatch(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	body, err := wire.AppendBatch(nil, []wire.BatchEntry{
		{Body: []byte("b0"), Properties: props("TAGS", "x")},
		{Body: []byte("b1"), Properties: props("UNIQ_KEY", "given-id"), Flag: 7},
		{Body: []byte("b2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	sh := &wire.SendMessageRequestHeaderV2{SendMessageRequestHeader: *sendHeader("TopicB", 2, "")}
	sh.Batch = true
	resp := invoke(t, p, request(wire.SendBatchMessage, sh, body))
	wantCode(t, resp, wire.Success)
	ids := strings.Split(resp.ExtFields["msgId"], ",")
	if len(ids) != 3 {
		t.Fatalf("msgId %q", resp.ExtFields["msgId"])
	}
	for _, id := range ids {
		if _, _, err := message.ParseOffsetID(id); err != nil {
			t.Fatal(err)
		}
	}
	if ext(t, resp, "queueId") != 2 || ext(t, resp, "queueOffset") != 0 {
		t.Fatalf("batch response %v", resp.ExtFields)
	}

	msgs := records(t, h.pull(p, pullHeader("g", "TopicB", 2, 0)).Body)
	if len(msgs) != 3 {
		t.Fatalf("%d records", len(msgs))
	}
	for i, m := range msgs {
		if string(m.Body) != "b"+string(rune('0'+i)) || m.UniqKey() == "" || m.QueueOffset != int64(i) {
			t.Errorf("record %d: %+v", i, m)
		}
		if message.OffsetID(m.StoreHost, m.CommitLogOffset) != ids[i] {
			t.Errorf("record %d at %d, msgId %s", i, m.CommitLogOffset, ids[i])
		}
	}
	if msgs[1].UniqKey() != "given-id" || msgs[1].Flag != 7 || msgs[0].Tags() != "x" {
		t.Fatalf("batch entries not kept: %+v %+v", msgs[0], msgs[1])
	}
}

func TestSendErrors(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "Small", ReadQueues: 2, WriteQueues: 2}); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.CreateTopic(meta.Topic{Name: "ReadOnly", Perm: meta.PermRead}); err != nil {
		t.Fatal(err)
	}
	if err := h.eng.CreateTopic(meta.Topic{Name: "Fifo", MessageType: meta.MessageTypeFIFO}); err != nil {
		t.Fatal(err)
	}
	noTopic := sendHeader("x", 0, "")
	noTopic.Topic = ""
	half := sendHeader("TopicA", 0, props("TRAN_MSG", "true", "PGROUP", "pg"))
	half.SysFlag = message.SysFlagTransactionPrepared
	tests := []struct {
		name string
		req  *wire.Command
		want wire.ResponseCode
	}{
		{"no header", &wire.Command{Code: int32(wire.SendMessage), Body: []byte("x")}, wire.InvalidParameter},
		{"empty topic", request(wire.SendMessage, noTopic, []byte("x")), wire.InvalidParameter},
		{"bad queue id", request(wire.SendMessage, sendHeader("Small", 5, ""), []byte("x")), wire.InvalidParameter},
		{"bad topic name", request(wire.SendMessage, sendHeader("a b", 0, ""), []byte("x")), wire.InvalidParameter},
		{"empty body", request(wire.SendMessage, sendHeader("TopicA", 0, ""), nil), wire.MessageIllegal},
		{"template topic", request(wire.SendMessage, sendHeader("TBW102", 0, ""), []byte("x")), wire.SystemError},
		{"system topic", request(wire.SendMessage, sendHeader("SCHEDULE_TOPIC_XXXX", 0, ""), []byte("x")), wire.NoPermission},
		{"read-only topic", request(wire.SendMessage, sendHeader("ReadOnly", 0, ""), []byte("x")), wire.NoPermission},
		{"type mismatch", request(wire.SendMessage, sendHeader("Fifo", 0, props("DELAY", "1")), []byte("x")), wire.MessageIllegal},
		{"half in batch", request(wire.SendBatchMessage, half, []byte{}), wire.MessageIllegal},
		{"garbage batch", request(wire.SendBatchMessage, sendHeader("TopicA", 0, ""), []byte{0, 0, 0, 9, 1}), wire.InvalidParameter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, p, tt.req)
			wantCode(t, resp, tt.want)
			if resp.Remark == "" {
				t.Error("error without remark")
			}
		})
	}
}

// Without auto-creation a send to an unknown topic is TOPIC_NOT_EXIST,
// which producers retry elsewhere.
func TestSendUnknownTopic(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{})
	p := h.dial(nil)
	resp := invoke(t, p, request(wire.SendMessage, sendHeader("Nope", 0, ""), []byte("x")))
	wantCode(t, resp, wire.TopicNotExist)
}

// A send to a topic the engine creates on the fly signals TopicsChanged,
// the template topic TBW102 is announced with perm 7, and the trace topic
// with one queue.
func TestSendAutoCreateSignalsRegistration(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	drain(h.b.TopicsChanged())
	h.send(p, "Fresh", -1, "x")
	select {
	case <-h.b.TopicsChanged():
	default:
		t.Fatal("no TopicsChanged after an auto-created topic")
	}
	h.send(p, "Fresh", -1, "y")
	select {
	case <-h.b.TopicsChanged():
		t.Fatal("TopicsChanged for a known topic")
	default:
	}
	var fresh, tbw, trace bool
	for _, c := range h.b.TopicConfigs() {
		switch c.TopicName {
		case "Fresh": // with the producer's defaultTopicQueueNums
			fresh = c.Perm == 6 && c.WriteQueueNums == 4 && c.ReadQueueNums == 4
		case "TBW102":
			tbw = c.Perm == 7
		case "RMQ_SYS_TRACE_TOPIC": // made at start, for message traces
			trace = c.Perm == 6 && c.WriteQueueNums == 1 && c.ReadQueueNums == 1
		}
	}
	if !fresh || !tbw || !trace {
		t.Fatalf("topic configs %+v", h.b.TopicConfigs())
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// A consumer's failed message sent to %RETRY%<group> (the client's
// sendMessageBackAsNormal) is stored there until it was reconsumed more
// than maxReconsumeTimes; then it goes to %DLQ%<group>.
func TestSendToRetryTopic(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	send := func(reconsume, max int32) *wire.Command {
		sh := sendHeader("%RETRY%cg", -1, props("RETRY_TOPIC", "Orders", "ORIGIN_MESSAGE_ID", "orig-1", "UNIQ_KEY", "u-"+string(rune('0'+reconsume))))
		sh.ProducerGroup = "CLIENT_INNER_PRODUCER"
		sh.ReconsumeTimes = reconsume
		sh.MaxReconsumeTimes = &max
		return invoke(t, p, request(wire.SendMessage, sh, []byte("failed")))
	}
	wantCode(t, send(2, 2), wire.Success)
	wantCode(t, send(3, 2), wire.Success)

	retry := records(t, h.pull(p, pullHeader("cg", "%RETRY%cg", 0, 0)).Body)
	if len(retry) != 1 || retry[0].ReconsumeTimes != 2 || retry[0].Properties["RETRY_TOPIC"] != "Orders" {
		t.Fatalf("retry topic holds %+v", retry)
	}
	dlq := records(t, h.pull(p, pullHeader("cg", "%DLQ%cg", 0, 0)).Body)
	if len(dlq) != 1 || dlq[0].ReconsumeTimes != 3 || dlq[0].Properties[message.PropertyDLQOriginTopic] != "Orders" || dlq[0].Properties[message.PropertyDLQOriginMessageID] != "orig-1" {
		t.Fatalf("dead-letter topic holds %+v", dlq)
	}
	if _, err := h.eng.Group("cg"); err != nil {
		t.Fatalf("group not created: %v", err)
	}
}

// Flow control: while the engine is behind, sends get SYSTEM_BUSY and
// other requests are served.
func TestBusy(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	h.send(p, "TopicA", 0, "x")
	h.b.busy.Store(true)
	wantCode(t, invoke(t, p, request(wire.SendMessage, sendHeader("TopicA", 0, ""), []byte("x"))), wire.SystemBusy)
	wantCode(t, h.pull(p, pullHeader("g", "TopicA", 0, 1)), wire.PullNotFound)
	h.b.busy.Store(false)
	h.send(p, "TopicA", 0, "x")
}

// Garbage on one connection closes that connection only.
func TestGarbageFrames(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	for _, junk := range [][]byte{
		{0, 0, 0, 4, 9, 0, 0, 0},                     // unknown serialize type
		{0, 0, 0, 8, 0, 0, 0, 4, '{', 'x', ':', '}'}, // broken JSON header
		{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0},         // absurd length
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),  // wrong protocol
	} {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(junk)
		c.Close()
	}
	h.send(p, "TopicA", 0, "still serving")
	q := h.dial(nil)
	h.send(q, "TopicA", 0, "new connections too")
}

func TestSendRequestReply(t *testing.T) {
	h := newHarness(t)
	requests := make(recorder, 4)
	requester := h.dial(requests)
	heartbeat(t, requester, "requester@1", "pg", "", "")
	responder := h.dial(nil)
	sh := sendHeader("DefaultCluster_REPLY_TOPIC", 0, props("REPLY_TO_CLIENT", "requester@1", "CORRELATION_ID", "c-1", "MSG_TYPE", "reply", "UNIQ_KEY", "r-1"))
	sh.SysFlag = message.SysFlagCompressed // the Go client's bug: the body is plain
	resp := invoke(t, responder, request(wire.SendReplyMessage, sh, []byte("answer")))
	wantCode(t, resp, wire.Success)
	push := requests.next(t, wire.PushReplyMessageToClient)
	if string(push.Body) != "answer" || push.ExtFields["sysFlag"] != "0" || !strings.Contains(push.ExtFields["properties"], "c-1") {
		t.Fatalf("pushed reply %v %q", push.ExtFields, push.Body)
	}
	sh = sendHeader("DefaultCluster_REPLY_TOPIC", 0, props("REPLY_TO_CLIENT", "gone@1"))
	wantCode(t, invoke(t, responder, request(wire.SendReplyMessage, sh, []byte("x"))), wire.ConsumerNotOnline)
}

// A requester that never heartbeated gets the reply on the connection it
// sent its request on; a client that did heartbeat keeps its groups.
func TestSendRequestBeforeHeartbeat(t *testing.T) {
	h := newHarness(t)
	requests := make(recorder, 4)
	requester := h.dial(requests)
	request1 := props("REPLY_TO_CLIENT", "requester@1", "CORRELATION_ID", "c-1", "MSG_TYPE", "request", "UNIQ_KEY", "q-1")
	wantCode(t, invoke(t, requester, request(wire.SendMessage, sendHeader("Questions", 0, request1), []byte("question"))), wire.Success)
	responder := h.dial(nil)
	sh := sendHeader("DefaultCluster_REPLY_TOPIC", 0, props("REPLY_TO_CLIENT", "requester@1", "CORRELATION_ID", "c-1", "MSG_TYPE", "reply"))
	wantCode(t, invoke(t, responder, request(wire.SendReplyMessage, sh, []byte("answer"))), wire.Success)
	if push := requests.next(t, wire.PushReplyMessageToClient); string(push.Body) != "answer" {
		t.Fatalf("pushed reply %q", push.Body)
	}

	// A consumer that sends a request stays a consumer.
	other := h.dial(nil)
	heartbeat(t, other, "consumer@1", "cg", "Questions", "*")
	request2 := props("REPLY_TO_CLIENT", "consumer@1", "CORRELATION_ID", "c-2", "UNIQ_KEY", "q-2")
	wantCode(t, invoke(t, other, request(wire.SendMessage, sendHeader("Questions", 0, request2), []byte("question"))), wire.Success)
	if ids := h.eng.Clients().ConsumerIDs("cg"); len(ids) != 1 || ids[0] != "consumer@1" {
		t.Fatalf("consumers of cg after a request: %v", ids)
	}
}

// SEND_MESSAGE_V2 carries the header with one-letter names.
func TestSendMessageV2(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	sh := &wire.SendMessageRequestHeaderV2{SendMessageRequestHeader: *sendHeader("TopicV2", 0, props("TAGS", "v2"))}
	req := request(wire.SendMessageV2, sh, []byte("short names"))
	if _, ok := req.ExtFields["b"]; !ok {
		t.Fatalf("not a V2 header: %v", req.ExtFields)
	}
	resp := invoke(t, p, req)
	wantCode(t, resp, wire.Success)
	msgs := records(t, h.pull(p, pullHeader("g", "TopicV2", 0, 0)).Body)
	if len(msgs) != 1 || string(msgs[0].Body) != "short names" || msgs[0].Tags() != "v2" {
		t.Fatalf("pulled %+v", msgs)
	}
}

// The properties of a send are stored as the client wrote them, with the
// broker's CLUSTER after them (winning over one the client gave).
func TestSendPropertiesStoredAsSent(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	for i, sent := range []string{
		"TAGS\x01t\x02UNIQ_KEY\x01u1\x02CLUSTER\x01theirs\x02",
		"TAGS\x01t\x02UNIQ_KEY\x01u1",         // no final separator
		"TAGS\x01t\x02\x02UNIQ_KEY\x01u1\x02", // an empty piece, dropped as decoding drops it
	} {
		wantCode(t, invoke(t, p, request(wire.SendMessage, sendHeader("TopicP", 0, sent), []byte("x"))), wire.Success)
		pr := h.pull(p, pullHeader("g", "TopicP", 0, int64(i)))
		recs := records(t, pr.Body)
		if len(recs) == 0 {
			t.Fatalf("%q: nothing stored", sent)
		}
		m := recs[0]
		if m.Tags() != "t" || m.UniqKey() != "u1" || m.Property(message.PropertyCluster) != DefaultClusterName || len(m.Properties) != 3 {
			t.Fatalf("%q: stored properties %v", sent, m.Properties)
		}
		if i == 0 {
			raw, err := message.PeekStored(pr.Body)
			if err != nil {
				t.Fatal(err)
			}
			if want := sent + "CLUSTER\x01" + DefaultClusterName + "\x02"; string(raw.Properties) != want {
				t.Fatalf("stored %q, want %q", raw.Properties, want)
			}
		}
	}
}
