package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// smallWindows makes both sides use HTTP/2's smallest windows, so large
// messages need many window updates in each direction.
var smallWindows = transport.Options{WindowSize: 65535, ConnWindowSize: 65535}

func TestLargeUnaryBothWays(t *testing.T) {
	_, _, tc, _ := serve(t, smallWindows, grpc.WithInitialWindowSize(65535), grpc.WithInitialConnWindowSize(65535))
	ctx := testContext(t)
	for _, size := range []int32{0, 1, 16384, 271828, 3 << 20} {
		resp, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: size, Payload: payload(size)})
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if got := len(resp.GetPayload().GetBody()); got != int(size) {
			t.Fatalf("size %d: answer has %d bytes", size, got)
		}
	}
}

func TestServerStreamingFlowControl(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{}, grpc.WithInitialWindowSize(65535), grpc.WithInitialConnWindowSize(65535))
	ctx := testContext(t)
	var params []*testpb.ResponseParameters
	want := 0
	for i := range 40 {
		n := int32(1+i) * 31415
		params = append(params, &testpb.ResponseParameters{Size: n})
		want += int(n)
	}
	stream, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: params})
	if err != nil {
		t.Fatal(err)
	}
	got, count := 0, 0
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetPayload().GetBody()) != int(params[count].Size) {
			t.Fatalf("message %d: %d bytes, want %d", count, len(resp.GetPayload().GetBody()), params[count].Size)
		}
		got += len(resp.GetPayload().GetBody())
		count++
	}
	if count != len(params) || got != want {
		t.Fatalf("got %d messages, %d bytes; want %d, %d", count, got, len(params), want)
	}
}

func TestClientStreaming(t *testing.T) {
	_, _, tc, _ := serve(t, smallWindows)
	ctx := testContext(t)
	stream, err := tc.StreamingInputCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := int32(0)
	for _, n := range []int32{27182, 8, 1828, 45904, 200000} {
		if err := stream.Send(&testpb.StreamingInputCallRequest{Payload: payload(n)}); err != nil {
			t.Fatal(err)
		}
		want += n
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.AggregatedPayloadSize != want {
		t.Fatalf("server counted %d bytes, want %d", resp.AggregatedPayloadSize, want)
	}
}

func TestPingPong(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{})
	ctx := testContext(t)
	stream, err := tc.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int32{31415, 9, 2653, 58979} {
		if err := stream.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: n}}, Payload: payload(n)}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if len(resp.GetPayload().GetBody()) != int(n) {
			t.Fatalf("round %d: %d bytes, want %d", i, len(resp.GetPayload().GetBody()), n)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("after CloseSend: %v, want io.EOF", err)
	}
}

func TestStatusCodeAndMessage(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{})
	ctx := testContext(t)
	for _, msg := range []string{"test status message", "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n", "100% done", ""} {
		_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.FailedPrecondition), Message: msg}})
		if s := status.Convert(err); s.Code() != codes.FailedPrecondition || s.Message() != msg {
			t.Fatalf("got %v %q, want FailedPrecondition %q", s.Code(), s.Message(), msg)
		}
		// The same status after a message was streamed: in trailers.
		stream, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{
			ResponseParameters: []*testpb.ResponseParameters{{Size: 10}},
			ResponseStatus:     &testpb.EchoStatus{Code: int32(codes.Aborted), Message: msg},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		_, err = stream.Recv()
		if s := status.Convert(err); s.Code() != codes.Aborted || s.Message() != msg {
			t.Fatalf("streamed: got %v %q, want Aborted %q", s.Code(), s.Message(), msg)
		}
	}
}

// A handler that panics fails its call with INTERNAL; the connection
// and the server go on serving. Inline and on a worker, unary and
// streaming.
func TestHandlerPanic(t *testing.T) {
	for name, opts := range map[string]transport.Options{"worker": {}, "inline": inlineUnary} {
		t.Run(name, func(t *testing.T) {
			_, _, tc, _ := serve(t, opts)
			ctx := testContext(t)
			asked := &testpb.EchoStatus{Code: int32(codes.Unknown), Message: "panic"}
			_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: asked})
			if s := status.Convert(err); s.Code() != codes.Internal || !strings.Contains(s.Message(), "handler panic") {
				t.Fatalf("unary: got %v %q, want Internal with the panic", s.Code(), s.Message())
			}
			stream, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseStatus: asked})
			if err != nil {
				t.Fatal(err)
			}
			_, err = stream.Recv()
			if s := status.Convert(err); s.Code() != codes.Internal || !strings.Contains(s.Message(), "handler panic") {
				t.Fatalf("streaming: got %v %q, want Internal with the panic", s.Code(), s.Message())
			}
			if _, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 3}); err != nil {
				t.Fatalf("a call after the panics: %v", err)
			}
		})
	}
}

func TestMetadataBothWays(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{})
	ctx := metadata.AppendToOutgoingContext(testContext(t), "x-echo", "header value", "x-echo-bin", "\x00\x01binary\xff")
	var header, trailer metadata.MD
	if _, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 3}, grpc.Header(&header), grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	if got := header.Get("x-echo"); len(got) != 1 || got[0] != "header value" {
		t.Fatalf("header x-echo = %q", got)
	}
	if got := trailer.Get("x-echo-bin"); len(got) != 1 || got[0] != "\x00\x01binary\xff" {
		t.Fatalf("trailer x-echo-bin = %q", got)
	}
	// A failed call carries the metadata in its trailers-only answer.
	header, trailer = nil, nil
	_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.NotFound), Message: "no"}}, grpc.Header(&header), grpc.Trailer(&trailer))
	if status.Code(err) != codes.NotFound {
		t.Fatalf("got %v", err)
	}
	if got := trailer.Get("x-echo-bin"); len(got) != 1 || got[0] != "\x00\x01binary\xff" {
		t.Fatalf("trailers-only x-echo-bin = %q", got)
	}
}

func TestPeerAddress(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{})
	resp, err := tc.UnaryCall(testContext(t), &testpb.SimpleRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.ServerId, "127.0.0.1:") {
		t.Fatalf("peer address seen by the handler: %q", resp.ServerId)
	}
}

func TestDeadlineReachesHandler(t *testing.T) {
	_, svc, tc, _ := serve(t, transport.Options{})
	ctx, cancel := context.WithTimeout(testContext(t), 100*time.Millisecond)
	defer cancel()
	_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: -1})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-svc.canceled:
		if err == nil {
			t.Fatal("handler context ended without error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context never ended")
	}
}

func TestCancelReachesHandler(t *testing.T) {
	_, svc, tc, _ := serve(t, transport.Options{})
	ctx, cancel := context.WithCancel(testContext(t))
	openDuplex(t, ctx, tc)
	cancel()
	select {
	case err := <-svc.canceled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context: %v, want canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never saw the cancellation")
	}
}

func TestUnknownMethod(t *testing.T) {
	_, _, _, cc := serve(t, transport.Options{})
	err := cc.Invoke(testContext(t), "/grpc.testing.TestService/NoSuchCall", &testpb.Empty{}, &testpb.Empty{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("got %v, want Unimplemented", err)
	}
	err = cc.Invoke(testContext(t), "/no.Such/Service", &testpb.Empty{}, &testpb.Empty{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("got %v, want Unimplemented", err)
	}
}

func TestMessageTooLarge(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{MaxRecvMsgSize: 1 << 16})
	ctx := testContext(t)
	_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{Payload: payload(1 << 17)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("got %v, want ResourceExhausted", err)
	}
	// The connection still serves.
	if _, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 10, Payload: payload(100)}); err != nil {
		t.Fatal(err)
	}
}

func TestGzipRequests(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{})
	resp, err := tc.UnaryCall(testContext(t), &testpb.SimpleRequest{ResponseSize: 5, Payload: payload(100000)}, grpc.UseCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetPayload().GetBody()) != 5 {
		t.Fatalf("answer has %d bytes", len(resp.GetPayload().GetBody()))
	}
}

func TestConcurrentCalls(t *testing.T) {
	_, _, tc, _ := serve(t, transport.Options{Workers: 4}, grpc.WithInitialWindowSize(65535), grpc.WithInitialConnWindowSize(65535))
	callConcurrently(t, testContext(t), tc, 32, 50, func(g, i int) int32 { return int32((g*50 + i) % 5000) })
}

// callConcurrently makes calls unary calls from each of goroutines
// goroutines, the sizes of request and answer given by size, and checks
// every answer.
func callConcurrently(t *testing.T, ctx context.Context, tc testpb.TestServiceClient, goroutines, calls int, size func(g, i int) int32) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				n := size(g, i)
				resp, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: n, Payload: payload(n)})
				if err == nil && len(resp.GetPayload().GetBody()) != int(n) {
					err = fmt.Errorf("answer of %d bytes, want %d", len(resp.GetPayload().GetBody()), n)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// openDuplex opens a FullDuplexCall and makes one round trip on it, so
// that the server's handler is running.
func openDuplex(t *testing.T, ctx context.Context, tc testpb.TestServiceClient) grpc.BidiStreamingClient[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse] {
	t.Helper()
	stream, err := tc.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	return stream
}

func TestGracefulStopLetsCallsFinish(t *testing.T) {
	srv, _, tc, _ := serve(t, transport.Options{})
	ctx := testContext(t)
	stream := openDuplex(t, ctx, tc)
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	// The open call keeps working until it ends.
	if err := stream.Send(&testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 7}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil || len(resp.GetPayload().GetBody()) != 7 {
		t.Fatalf("open call after GracefulStop: %v, %v", resp, err)
	}
	select {
	case <-stopped:
		t.Fatal("GracefulStop returned with a call open")
	default:
	}
	stream.CloseSend()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("end of call: %v", err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("GracefulStop did not return after the last call ended")
	}
	if _, err := tc.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(false)); err == nil {
		t.Fatal("a call succeeded after GracefulStop")
	}
}

func TestRegisterServicePanicsOnWrongImpl(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("RegisterService accepted an implementation of another interface")
		}
	}()
	transport.NewServer(transport.Options{}).RegisterService(&testpb.TestService_ServiceDesc, bytes.NewBuffer(nil))
}

// inlineUnary runs every unary call on the connection's reader.
var inlineUnary = transport.Options{Inline: func(string) bool { return true }}

func TestInlineCalls(t *testing.T) {
	_, svc, tc, _ := serve(t, inlineUnary, grpc.WithInitialWindowSize(65535), grpc.WithInitialConnWindowSize(65535))
	ctx := testContext(t)
	// A call that waits detaches; the connection keeps serving meanwhile.
	waitCtx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := tc.UnaryCall(waitCtx, &testpb.SimpleRequest{ResponseSize: -1})
		waited <- err
	}()
	callConcurrently(t, ctx, tc, 8, 50, func(g, i int) int32 { return int32((g*977 + i*131) % 300000) })
	cancel()
	if err := <-waited; status.Code(err) != codes.Canceled {
		t.Fatalf("waiting call: %v, want Canceled", err)
	}
	if err := <-svc.canceled; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting handler saw %v", err)
	}
	// Streams still run on workers.
	stream, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 100000}, {Size: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{100000, 3} {
		resp, err := stream.Recv()
		if err != nil || len(resp.GetPayload().GetBody()) != want {
			t.Fatalf("stream: %v, %v", err, resp)
		}
	}
}

func TestInlineStatusAndMetadata(t *testing.T) {
	_, _, tc, _ := serve(t, inlineUnary)
	ctx := metadata.AppendToOutgoingContext(testContext(t), "x-echo", "v")
	var header metadata.MD
	_, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.Unavailable), Message: "try ☺ later"}}, grpc.Header(&header))
	if s := status.Convert(err); s.Code() != codes.Unavailable || s.Message() != "try ☺ later" {
		t.Fatalf("got %v", err)
	}
	if _, err := tc.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
}
