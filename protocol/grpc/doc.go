// Package grpc is the RocketMQ 5 gRPC front-end: the
// apache.rocketmq.v2.MessagingService that RocketMQ 5.x clients speak,
// translated onto the engine.
//
// Where things are:
//
//   - proto/: Karman's own description of the protocol, wire-compatible
//     with the clients (same package, services, field numbers);
//   - rmqpb/: the Go code generated from it (see rmqpb/generate.go);
//   - convert/: messages between the protocol and the engine's stored form
//     (no network code);
//   - session/: the clients the server knows, by x-mq-client-id: their
//     settings and telemetry streams, and when they are gone (which
//     ends the renewal of their receipts);
//   - server/: one file per RPC, executing each request on the engine, and
//     the one table that turns engine errors into status codes;
//   - transport/: the HTTP/2 server that carries the calls (decoding
//     frames, flow control, gRPC framing, status trailers), serving the
//     generated service as grpc.Server would, at a fraction of its cost
//     per call.
package grpc
