// Package namesrv is the server module frontend.namesrv: the RocketMQ name
// server, the route table of the cluster module served by the remoting
// name-server processors. Importing it (blank) registers the module with
// server.Default, listening on --namesrv-addr (default ":9876"); "karman
// namesrv" runs the same module alone.
//
// The name server needs no engine: it keeps routes and KV configuration
// in memory and rebuilds them from broker registrations after a restart,
// as RocketMQ's does. Brokers silent for longer than their timeout (120 s
// by default) are dropped by a sweep every ExpireInterval.
//
// It exports karman_namesrv_brokers and karman_namesrv_topics gauges.
package namesrv
