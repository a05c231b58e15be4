// Package rmqpb is the Go code generated from Karman's description of the
// RocketMQ 5 gRPC protocol (../proto): the apache.rocketmq.v2 messages and
// the MessagingService client and server interfaces.
//
// Regenerate after editing ../proto with protoc (3.21 or newer),
// protoc-gen-go v1.36.12 and protoc-gen-go-grpc v1.6.2 on PATH:
//
//	go generate ./protocol/grpc/rmqpb
package rmqpb

//go:generate protoc -I ../proto --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative rmq_types.proto rmq_service.proto
