// Package protobench is the command line of karman-bench: "produce" and
// "consume", which drive a broker over RocketMQ remoting or gRPC, with
// Karman started in the process unless an address is given, and measure
// peer brokers (an embedded NATS JetStream server) with the same work in
// the same run; and "mqtt", which drives an MQTT broker at an address and
// a mosquitto it starts with the shapes of package bench/mqtt (its idle
// phase re-runs this program as "mqtt-idle-worker" processes).
//
// It lives apart from package cli because it links the peers' code and
// the load generators' clients (nats-server, nats.go, the Apache RocketMQ
// Go client): the karman server binary does not. "karman bench produce"
// and "karman bench consume" start karman-bench, found beside karman or
// on the PATH, with the same arguments.
//
// The in-process Karman is assembled by package serve with the front-ends
// compiled into the binary, as "karman serve" assembles it. One command
// runs at a time; nothing here is meant for concurrent use.
package protobench
