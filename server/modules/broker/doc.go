// Package broker is the server module frontend.remoting: the RocketMQ
// remoting broker, the request processors of protocol/remoting/broker on
// the engine, served on --broker-addr (default ":10911"), and registered
// with the name servers by a namesrv.Registrar. Importing it (blank)
// registers the module with server.Default; its flags and listener are
// named "broker".
//
// Flags (also KARMAN_BROKER_* variables):
//
//	--broker-addr            listen address (":10911"; "off" disables the broker)
//	--broker-advertise-addr  the IPv4 ip:port clients are told to dial; default:
//	                         the listener's IPv4 address when it is bound to one
//	                         (127.0.0.1 for the IPv6 loopback), else the host's
//	                         first non-loopback IPv4 address, with the listener's
//	                         port
//	--broker-namesrv         name servers to register with, "ip:port" separated by
//	                         commas or semicolons; default: the name server of the
//	                         same process, when it runs
//	--broker-name            broker name ("broker-a")
//	--broker-cluster         cluster name ("DefaultCluster")
//	--broker-max-inflight-bytes
//	                         memory for requests read and not yet handled, across
//	                         all connections ("256MiB", at least the 16 MiB frame
//	                         limit); a client that finds it spent is read no
//	                         further until there is room
//
// The advertised address is also the store host the engine writes into
// stored messages and offset message ids.
//
// The broker registers at start (and "karman: ready" follows only once the
// name servers answered, or gave up for a while), then every 30 s and at
// once whenever it creates or deletes a topic. Its topic set includes the
// retry and dead-letter topics of consumer groups and, with
// --auto-create-topics, the auto-create template TBW102 (perm 7), so
// producers of unknown topics find a route.
// The in-process name server (frontend.namesrv), when it runs, starts
// before the broker: the broker declares it an optional dependency.
//
// It exports karman_broker_held_pulls and karman_broker_flow_control
// gauges.
package broker
