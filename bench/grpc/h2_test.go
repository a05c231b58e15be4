package grpc

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
)

// statusService answers QueryRoute with the status its request asks for
// in the topic's name, and a route otherwise.
type statusService struct {
	rmqpb.UnimplementedMessagingServiceServer
}

func (statusService) QueryRoute(ctx context.Context, req *rmqpb.QueryRouteRequest) (*rmqpb.QueryRouteResponse, error) {
	if req.GetTopic().GetName() == "fail" {
		return nil, grpcstatus.Error(codes.PermissionDenied, "not for you ☺")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return &rmqpb.QueryRouteResponse{
		Status:        &rmqpb.Status{Code: rmqpb.Code_OK, Message: md.Get("x-mq-client-id")[0]},
		MessageQueues: []*rmqpb.MessageQueue{{Id: 3}},
	}, nil
}

func TestH2ChannelStatusAndAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := transport.NewServer(transport.Options{})
	rmqpb.RegisterMessagingServiceServer(srv, statusService{})
	go srv.Serve(l)
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := dialH2(ctx, l.Addr().String(), metadata.Pairs("x-mq-client-id", "client-7"))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.close()

	for i := range 3 { // HPACK state carries over from call to call
		req, err := encode(&rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "T"}})
		if err != nil {
			t.Fatal(err)
		}
		var resp rmqpb.QueryRouteResponse
		if err := ch.invoke(ctx, rmqpb.MessagingService_QueryRoute_FullMethodName, req, protoReply{&resp}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if resp.GetStatus().GetMessage() != "client-7" || len(resp.GetMessageQueues()) != 1 || resp.GetMessageQueues()[0].GetId() != 3 {
			t.Fatalf("call %d: answer %v", i, &resp)
		}
		req, _ = encode(&rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "fail"}})
		err = ch.invoke(ctx, rmqpb.MessagingService_QueryRoute_FullMethodName, req, protoReply{&resp})
		if s := grpcstatus.Convert(err); s.Code() != codes.PermissionDenied || s.Message() != "not for you ☺" {
			t.Fatalf("call %d: status %v, want PermissionDenied", i, err)
		}
	}
	err = ch.invoke(ctx, "/apache.rocketmq.v2.MessagingService/NoSuchCall", &encoded{}, protoReply{new(rmqpb.QueryRouteResponse)})
	if grpcstatus.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: %v, want Unimplemented", err)
	}
}
