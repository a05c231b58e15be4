// Package grpc is the server module frontend.grpc: the RocketMQ 5 gRPC
// front-end (protocol/grpc). Importing it (blank) registers the module
// with server.Default (--grpc-addr, default :8081, and --grpc-* flags); it
// serves the MessagingService on its transport (protocol/grpc/transport)
// and stops it gracefully on shutdown. Its TLS certificate is checked
// before any port is bound.
//
// Routes name this front-end's group as --broker-name. When several broker
// groups serve a topic, QueryRoute and QueryAssignment list every group
// the name servers route it to (--broker-namesrv, else the name server of
// this process), each with its master's gRPC endpoint, as RocketMQ's
// proxy does in cluster mode: a group's broker names its endpoint in its
// runtime information (GET_BROKER_RUNTIME_INFO, key "grpcEndpoint"), and
// a broker that does not is taken to serve gRPC on its host at this
// front-end's port. Routes are asked again after 3 s, endpoints after 30 s.
package grpc
