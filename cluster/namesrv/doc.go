// Package namesrv is the route registry of a RocketMQ-style name server,
// independent of any wire protocol: which brokers are alive, which topics
// they serve with how many queues, and the key/value configuration the name
// server keeps for administrators.
//
// # Model
//
// Brokers form groups. A group has a name ("broker-a"), belongs to one
// cluster ("DefaultCluster") and has members told apart by broker id:
// id 0 is the master, higher ids are replicas. Each member has the address
// clients dial and an HA address replicas use.
//
//	clusters   cluster name → broker names
//	brokers    broker name  → cluster, broker id → address
//	live       (cluster, address) → last registration, timeout, HA address, data version
//	topics     topic → broker name → queue data (read/write queues, perm, sys flag, order)
//
// A broker member calls [Table.Register] periodically (every 30 s for a Java
// broker) with its topic configurations. The master's registration decides
// the queue data of its group: a complete registration replaces the group's
// topic set, a partial one ([BrokerRegistration.Partial], Java's incremental
// registration after a topic is created) only adds and updates. Replicas'
// topic sets are ignored unless the group has no master and the replica is
// an acting master (enableActingMaster with the lowest id); it then
// publishes its topics read-only.
//
// A member that does not register again within its timeout (120 s unless
// it asked for another) is dropped by [Table.Expire], exactly as if it had
// called [Table.Unregister]: when the last member of a group goes, the
// group's queue data goes with it, and a topic left without queue data is
// forgotten.
//
// [Table.WipeWritePerm] takes the write permission of a group away in
// every topic, and from its later registrations, until
// [Table.AddWritePerm] gives it back or the group is gone: producers
// stop sending to it while its consumers drain it.
//
// [Table.Route] answers the question every client asks: for a topic, the
// queue data per broker group and the addresses of those groups, both
// sorted by broker name so that equal tables give equal routes (the Go
// client compares routes by value to detect changes).
//
// [KV] is the name server's in-memory configuration store: namespace → key
// → value.
//
// # Concurrency
//
// Table and KV are safe for concurrent use. Each guards its state with one
// read/write lock that is never held while calling out; every value they
// return is a copy the caller owns.
package namesrv
