// Package frontend is the registry of protocol front-ends that `karman
// serve` runs next to its HTTP endpoint.
//
// A front-end (the remoting broker, the name server, the gRPC endpoint, the
// MQTT gateway) registers itself once, usually from an init function in the
// package that wires it into the binary:
//
//	func init() {
//		frontend.Register(frontend.Frontend{
//			Name:        "remoting",
//			DefaultAddr: ":10911",
//			Usage:       "RocketMQ remoting (broker) listen address",
//			Start:       startRemoting,
//		})
//	}
//
// For every registered front-end, serve adds a --<name>-addr flag (and so a
// KARMAN_<NAME>_ADDR environment variable); the value "off" disables it.
// Serve binds the listener itself, prints its address, and hands it to
// Start together with the open engine. Start must return promptly, serving
// in its own goroutines; the stop function it returns is called once, on
// shutdown, in reverse start order, before the engine is closed.
//
// Register is safe for concurrent use, but registration is meant to happen
// during program initialisation.
package frontend
