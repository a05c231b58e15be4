package server

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// BenchmarkSendMessage sends 1 KiB messages over loopback gRPC from 16
// clients, each on its own connection with one request outstanding, as
// "karman bench produce --protocol grpc --producers 16" does. One op is
// one message; cpu-ns/op is server and client together.
func BenchmarkSendMessage(b *testing.B) {
	eng, err := engine.Open(b.TempDir(), &engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	if err := eng.CreateTopic(meta.Topic{Name: "B", ReadQueues: 8, WriteQueues: 8, Perm: meta.PermRW}); err != nil {
		b.Fatal(err)
	}
	srv, err := New(eng, Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchUnary(b, srv, srv)
}

// BenchmarkSendMessageFloor is BenchmarkSendMessage against a service that
// answers every SendMessage at once without storing anything, on the same
// gRPC transport settings and interceptors: what gRPC itself costs per
// call, which no change to the server's own work can go below.
func BenchmarkSendMessageFloor(b *testing.B) {
	srv, err := New(nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchUnary(b, srv, nopSender{})
}

type nopSender struct {
	rmqpb.UnimplementedMessagingServiceServer
}

func (nopSender) SendMessage(ctx context.Context, req *rmqpb.SendMessageRequest) (*rmqpb.SendMessageResponse, error) {
	id := req.GetMessages()[0].GetSystemProperties().GetMessageId()
	return &rmqpb.SendMessageResponse{Status: okStatus(), Entries: []*rmqpb.SendResultEntry{{Status: okStatus(), MessageId: id, Offset: 1}}}, nil
}

// benchUnary serves svc with the options of srv and sends it b.N
// messages from 16 clients.
func benchUnary(b *testing.B, srv *Server, svc rmqpb.MessagingServiceServer) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	g := transport.NewServer(srv.TransportOptions())
	rmqpb.RegisterMessagingServiceServer(g, svc)
	go g.Serve(lis)
	defer g.Stop()

	const clients = 16
	conns := make([]*grpc.ClientConn, clients)
	for i := range conns {
		cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithInitialWindowSize(DefaultWindowSize), grpc.WithInitialConnWindowSize(DefaultConnWindowSize))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		conns[i] = cc
	}
	body := bytes.Repeat([]byte("x"), 1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var left atomic.Int64
	left.Store(int64(b.N))
	cpu0 := processCPU()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, cc := range conns {
		wg.Go(func() {
			client := rmqpb.NewMessagingServiceClient(cc)
			ctx := clientCtx(fmt.Sprint("bench-", i))
			sys := &rmqpb.SystemProperties{BodyEncoding: rmqpb.Encoding_IDENTITY, MessageType: rmqpb.MessageType_NORMAL, BornHost: "bench", BornTimestamp: timestamppb.Now()}
			req := &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{{Topic: &rmqpb.Resource{Name: "B"}, SystemProperties: sys, Body: body}}}
			for n := 0; left.Add(-1) >= 0; n++ {
				sys.MessageId = fmt.Sprintf("01A0B1C2D3E4F5330A07A1B2C3%02X%06X", i, n)
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				resp, err := client.SendMessage(cctx, req)
				cancel()
				if err != nil || resp.GetStatus().GetCode() != rmqpb.Code_OK {
					b.Errorf("send: %v, %v", resp.GetStatus(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
