// Package grpc is the server module frontend.grpc: the RocketMQ 5 gRPC
// front-end (protocol/grpc). Importing it (blank) registers the module
// with server.Default (--grpc-addr, default :8081, and --grpc-* flags); it
// serves the MessagingService on its transport (protocol/grpc/transport)
// and stops it gracefully on shutdown. Its TLS certificate is checked
// before any port is bound.
package grpc
