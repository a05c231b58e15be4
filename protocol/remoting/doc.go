// Package remoting will hold the RocketMQ remoting (TCP) front-end: the wire
// codec, the connection server, the client used by tools and benchmarks, and
// the broker and name-server request processors. Every request is translated
// onto the engine; no broker semantics live here.
package remoting
