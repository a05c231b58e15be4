package transport_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// testService implements gRPC's own interoperability test service, so
// the transport is driven by grpc-go's client through every call shape.
type testService struct {
	testpb.UnimplementedTestServiceServer
	// canceled receives the error of a call's context once it ended, for
	// the calls that wait for their end (a UnaryCall asking for
	// ResponseSize -1, and FullDuplexCall).
	canceled chan error
}

func payload(n int32) *testpb.Payload {
	return &testpb.Payload{Body: bytes.Repeat([]byte{'k'}, int(n))}
}

func (s *testService) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

// UnaryCall answers with ResponseSize bytes and the requested status
// (it panics when the status message is "panic"), echoes "x-echo" metadata into a header and "x-echo-bin" into a
// trailer, and reports the caller's address as ServerId. ResponseSize
// -1 waits for the call's context to end.
func (s *testService) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-echo"); len(v) > 0 {
		grpc.SetHeader(ctx, metadata.Pairs("x-echo", v[0]))
	}
	if v := md.Get("x-echo-bin"); len(v) > 0 {
		grpc.SetTrailer(ctx, metadata.Pairs("x-echo-bin", v[0]))
	}
	if rs := req.GetResponseStatus(); rs != nil && rs.Message == "panic" {
		panic("the request asked for a panic")
	}
	if rs := req.GetResponseStatus(); rs != nil && rs.Code != 0 {
		return nil, status.Error(codes.Code(rs.Code), rs.Message)
	}
	if req.ResponseSize < 0 {
		transport.Detach(ctx) // it waits: the connection's other calls must not
		<-ctx.Done()
		s.canceled <- ctx.Err()
		return nil, ctx.Err()
	}
	resp := &testpb.SimpleResponse{Payload: payload(req.ResponseSize)}
	if p, ok := peer.FromContext(ctx); ok {
		resp.ServerId = p.Addr.String()
	}
	if bytes.Count(req.GetPayload().GetBody(), []byte{'k'}) != len(req.GetPayload().GetBody()) {
		return nil, status.Error(codes.DataLoss, "request payload corrupted")
	}
	return resp, nil
}

// StreamingOutputCall corks its messages (transport.Cork): they leave
// together, except where flow control makes them wait for the client.
// It panics when the status message is "panic".
func (s *testService) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	transport.Cork(stream.Context())
	if rs := req.GetResponseStatus(); rs != nil && rs.Message == "panic" {
		panic("the request asked for a panic")
	}
	for _, p := range req.ResponseParameters {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: payload(p.Size)}); err != nil {
			return err
		}
	}
	if rs := req.GetResponseStatus(); rs != nil && rs.Code != 0 {
		return status.Error(codes.Code(rs.Code), rs.Message)
	}
	return nil
}

func (s *testService) StreamingInputCall(stream grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	var sum int32
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: sum})
		}
		if err != nil {
			return err
		}
		sum += int32(len(req.GetPayload().GetBody()))
	}
}

func (s *testService) FullDuplexCall(stream grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if s.canceled != nil {
				s.canceled <- stream.Context().Err()
			}
			return err
		}
		for _, p := range req.ResponseParameters {
			if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: payload(p.Size)}); err != nil {
				return err
			}
		}
	}
}

// serve starts a transport server with the test service on a loopback
// port and returns a client connected to it.
func serve(t testing.TB, opts transport.Options, dialOpts ...grpc.DialOption) (*transport.Server, *testService, testpb.TestServiceClient, *grpc.ClientConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := transport.NewServer(opts)
	svc := &testService{canceled: make(chan error, 16)}
	testpb.RegisterTestServiceServer(srv, svc)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != transport.ErrServerStopped {
			t.Errorf("Serve returned %v, want ErrServerStopped", err)
		}
	})
	cc, err := grpc.NewClient(l.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return srv, svc, testpb.NewTestServiceClient(cc), cc
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
