// Package grpc wires the RocketMQ 5 gRPC front-end (protocol/grpc) into
// `karman serve`: it registers the "grpc" front-end (--grpc-addr, default
// :8081), serves the MessagingService on its transport (protocol/grpc/transport),
// and stops it gracefully on shutdown.
package grpc
