// Package ha is the server module cluster.ha: replication of a broker
// group's commit log (package cluster/ha). Importing it (blank)
// registers the module with server.Default; its flags are named "ha".
//
// Without --ha-role or --ha-controller the module does nothing: the
// server is a single broker. With --ha-role, the role is fixed for the
// life of the process:
//
//	--ha-role                  "master" or "replica"; empty: no replication
//	--ha-addr                  where a master serves its replicas (":10912")
//	--ha-master                the master's --ha-addr, host:port (replica)
//	--ha-replication           "async" (default) or "sync": a master's sends
//	                           wait for --ha-min-insync-replicas members
//	--ha-min-insync-replicas   members, the master included, that must hold a
//	                           message before a sync send is acknowledged (2)
//	--ha-ack-timeout           how long a sync send waits for them (3s); past
//	                           it the producer gets FLUSH_SLAVE_TIMEOUT
//	--ha-broker-id             the id a replica registers with at the name
//	                           servers (1 or more); default: derived from
//	                           its advertised address, so that the replicas
//	                           of a group do not share one
//
// With --ha-controller instead, the role comes from the controller quorum
// (package cluster/controller, "karman controller"):
//
//	--ha-controller            the quorum's request addresses, host:port,...
//	--ha-broker-id             this broker's id in its group (1 or more), also
//	                           its id at the name servers while a replica
//	--ha-advertise-addr        host:port replicas dial for --ha-addr; default:
//	                           the listener's, with the broker's host (else
//	                           127.0.0.1) for an unspecified one
//	--ha-heartbeat-interval    how often the broker sends a heartbeat (1s)
//	--ha-controller-lease      a master whose heartbeats go unanswered this
//	                           long stops taking writes (3s): keep it below
//	                           the controller's --broker-heartbeat-timeout
//	                           less two heartbeat intervals, so that a master
//	                           cut off from the quorum stops before another
//	                           is elected
//
// The engine opens as a replica. The broker registers (group
// --broker-name, cluster --broker-cluster) and sends heartbeats with its
// log's end and epoch; each answer is the group's record, and the broker
// acts on it: recorded master of epoch E, it is promoted to epoch E (a
// log already at E, after a restart, asks the controller for a new
// election first) and serves replicas; otherwise it is demoted if it was
// master and copies the recorded master's log. As master it reports the
// replicas in sync to the controller; a report refused because another
// master was elected demotes it at once. The broker also holds a watch
// connection to the controller leader (POST /v1/watch): when the process
// dies or stops, the connection closes and the leader replaces a master
// at once instead of after the heartbeat timeout.
//
// Each start of a --ha-role master begins a new epoch (the last recorded + 1), so
// that a failover by hand (the replica restarted with --ha-role master,
// the old master returning with --ha-role replica) leaves the old master
// something to compare: it cuts its log back to where the two agree
// before it copies the new master's.
//
// A replica's engine opens in replica mode (writes are refused with
// SERVICE_NOT_AVAILABLE) and copies the master's log, which it
// dispatches itself, so consumers may read from it. The group's name and
// the segment size must agree with the master's; the master refuses a
// replica whose do not. The master's listener is bound when the module
// starts, not with the server's other listeners.
//
// Topics, groups and consumer offsets reach the replica as a snapshot
// the master sends every second when they changed (see cluster/ha).
package ha
