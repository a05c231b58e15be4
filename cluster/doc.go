// Package cluster holds what spans more than one process: the route
// registry of the name server (package namesrv), broker registration and
// heartbeats, replication, and the controller quorum (on hashicorp/raft)
// that promotes a replica when a leader dies. It states the transports it
// needs as small interfaces; the binary wires concrete ones in.
package cluster
