// Package grpc will hold the RocketMQ 5 gRPC front-end: the
// apache.rocketmq.v2.MessagingService, built from Karman's own wire-compatible
// .proto files and translated onto the engine.
package grpc
