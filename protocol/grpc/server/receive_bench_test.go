package server

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// BenchmarkReceiveAck receives 1 KiB messages over loopback gRPC, 32 per
// ReceiveMessage, with 4 consumers, each acknowledging what it got with
// one AckMessage. One op is one message.
func BenchmarkReceiveAck(b *testing.B) {
	h := newConsumeHarness(b, Options{})
	h.topic("B", 4)
	ctx := context.Background()
	batch := make([]*message.Message, 32)
	for i := range batch {
		batch[i] = &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024), Properties: map[string]string{
			message.PropertyTags: "TagA", message.PropertyKeys: "key", message.PropertyUniqKey: "01A0B1C2D3E4F5330A07A1B2C300000000",
		}}
	}
	for sent := 0; sent < b.N; sent += len(batch) {
		if _, err := h.eng.SendBatch(ctx, batch, engine.AnyQueue); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.eng.WaitDispatched(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	var done atomic.Int64
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx := clientCtx("bench-" + string(rune('a'+c)))
			req := receiveReq("G", "B", 32, time.Minute)
			ack := &rmqpb.AckMessageRequest{Group: &rmqpb.Resource{Name: "G"}, Topic: &rmqpb.Resource{Name: "B"}}
			for done.Load() < int64(b.N) {
				st, msgs, err := receiveAll(cctx, h.client, req)
				if err != nil {
					b.Error(err)
					return
				}
				if st.GetCode() != rmqpb.Code_OK {
					continue // the others took the last messages
				}
				ack.Entries = ack.Entries[:0]
				for _, m := range msgs {
					sp := m.GetSystemProperties()
					ack.Entries = append(ack.Entries, &rmqpb.AckMessageEntry{MessageId: sp.GetMessageId(), ReceiptHandle: sp.GetReceiptHandle()})
				}
				resp, err := h.client.AckMessage(cctx, ack)
				if err != nil || resp.GetStatus().GetCode() != rmqpb.Code_OK {
					b.Errorf("ack: %v, %v", resp.GetStatus(), err)
					return
				}
				done.Add(int64(len(msgs)))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	// CPU per message, server and client together: on a busy machine a
	// steadier figure than the rate.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
