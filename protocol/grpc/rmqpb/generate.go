// Package rmqpb is the Go code generated from Karman's description of the
// RocketMQ 5 gRPC protocol (../proto): the apache.rocketmq.v2 messages and
// the MessagingService client and server interfaces.
//
// The *_vtproto.pb.go files hold encoding and decoding code generated per
// message by protoc-gen-go-vtproto (github.com/planetscale/vtprotobuf),
// which the server's codec uses instead of reflection.
//
// Regenerate after editing ../proto with protoc (3.21 or newer),
// protoc-gen-go v1.36.12, protoc-gen-go-grpc v1.6.2 and
// protoc-gen-go-vtproto v0.6.0 on PATH:
//
//	go generate ./protocol/grpc/rmqpb
package rmqpb

//go:generate protoc -I ../proto --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-vtproto_out=. --go-vtproto_opt=paths=source_relative,features=marshal+unmarshal+unmarshal_unsafe+size rmq_types.proto rmq_service.proto
