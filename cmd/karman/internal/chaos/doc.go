// Package chaos is a fault-injection harness for a Karman cluster, in the
// manner of OpenChaos: it starts a cluster of separate karman processes
// (three "karman namesrv --controller" nodes, each a name server and a
// controller, and two broker groups of a master and a replica whose roles
// come from the controllers), drives it with the real RocketMQ Go client
// (keyed messages, every send recorded with its result and time, a push
// consumer recording every delivery), injects one fault, and judges the
// history (Check): lost, duplicated, per-key order, the failover time
// and the client recovery time.
//
// # Networks
//
// As root with the ip command, each process runs in a network namespace
// of its own, joined to a bridge by a veth pair; the harness creates
// them with names unique to the run and removes them when the cluster
// closes. The namespaces are named karman-chaos-<run>-<pid>-<node>; a
// later run removes those whose harness process died before it could.
// Partitions cut a namespace off from some peers with routing rules in
// the namespace ("ip rule ... blackhole" for both directions, ahead of
// the local table), so no iptables is needed. Without root or ip, the
// processes share the loopback interface, and partition faults are
// refused with ErrNoNetns.
//
// # Faults
//
// A fault is injected, the harness waits for what restores the group,
// and the victim is restored:
//
//	kill-master             SIGKILL of a group's master; restarted once
//	                        another broker is elected, so it returns as
//	                        a replica
//	kill-replica            SIGKILL of a replica; restarted after the
//	                        controller's heartbeat timeout
//	kill-controller-leader  SIGKILL of the raft leader's process (its
//	                        name server with it); restarted after the
//	                        heartbeat timeout
//	pause-master            SIGSTOP of a master until another is elected,
//	                        then SIGCONT
//	partition-master        the master's namespace cut off from the
//	                        controllers (and name servers) and its
//	                        replica until another is elected, then healed
//	truncate-replica        SIGKILL of a replica, 64 KiB of its commit
//	                        log's tail zeroed and its checkpoint removed,
//	                        then restarted
//	delay-replication       every chunk of the replication stream held
//	                        ClusterOptions.Delay in the proxies, for
//	                        twice the heartbeat timeout
//	lossy-replication       the same, and with probability Loss per
//	                        chunk the stream stalls 200 ms or (one time
//	                        in four) is reset
//
// The kernel may have no netem, so delay and loss come from a Proxy: a
// user-space TCP relay in the harness (on the bridge's address, or on
// loopback) in front of each broker's replication port, which the
// broker advertises to its replicas (--ha-advertise-addr). The cluster
// has the proxies only for these two faults (ClusterOptions.HAProxy):
// a partition cuts namespaces, and the relays would bridge it. TCP does
// not lose bytes, so loss is what a lossy path does to a stream: a
// stall while the segment is sent again, or a reset.
//
// # Figures
//
// Check counts lost (acknowledged, never delivered), duplicated and
// per-key order violations; a final read by a new consumer group after
// the run counts lost_final, what the groups' masters no longer hold.
// failover_ms is the time from the fault until the group has a master
// (another broker, for a master fault) that the name servers route to
// and that acknowledges a probe send the harness makes to it directly.
// With sync replication and --ha-min-insync-replicas 2 a group of two
// acknowledges nothing while one member is down, so this includes the
// victim's return as a replica. recovery_ms is the time from the fault
// until the workload's client has a send to that group acknowledged
// that it made after its first failed one, by another broker than a
// faulted master (the offset message id names the broker that stored
// it). The RocketMQ Go client fetches routes on a 30 s timer and never
// after a failed send, so after a master fault the difference between
// the two is the client waiting for that timer. victim_acks counts the
// sends made after a master fault that the old master acknowledged.
//
// # Concurrency
//
// A Cluster is used by one goroutine; the workload's recorders are safe
// for the client's goroutines.
package chaos
