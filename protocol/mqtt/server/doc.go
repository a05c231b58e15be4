// Package server serves MQTT 3.1.1 and 5.0 clients on an engine opened
// with the route.Router of the same server (see package mqtt for the
// design).
//
//	r := route.New()
//	e, _ := engine.Open(dir, &engine.Options{Router: r, AutoCreateTopics: true})
//	srv, _ := server.New(e, r, nil)
//	go srv.Serve(ln) // or srv.ServeConn(c) for each WebSocket or TLS stream
//	defer srv.Close()
//
// What it does: CONNECT with assigned client ids, Session Present, server
// keep alive, clean session/clean start and session expiry, takeover (5.0:
// DISCONNECT 0x8E to the old connection); authentication of CONNECT (with
// the client certificate a TLS connection verified, as
// hook.Credentials.Certificate) and authorization of PUBLISH and of a
// will at CONNECT (hook.Topic(first), then hook.MQTT(topic)) and
// SUBSCRIBE (hook.MQTT(filter), and hook.Topic(first) for a literal first
// level, hook.AllTopics for a wildcard one) through the engine's hooks, refused with 0x86/0x87 (5.0) or
// return code 4/5, PUBACK/SUBACK 0x87 or SUBACK 0x80 (a 3.1.1 PUBLISH
// refused is acknowledged and dropped: 3.1.1 has no negative
// acknowledgement); a session resumed only by the principal that made it
// (another's connection with its client id starts a new one; one saved
// before authentication was turned on, with no owner, is taken by the
// first principal that connects with its client id); rights checked
// again after the hooks change (hook.Changing: an ACL edited): a
// connected client whose user no longer stands, or one of whose
// subscriptions is now refused, loses that subscription and is
// disconnected (5.0: DISCONNECT 0x87 Not authorized with a reason
// naming it; 3.1.1: closed; the will of a user that no longer stands is
// dropped), and a resumed session's subscriptions are
// checked under the connecting principal before delivery starts, the
// refused ones removed with their messages in flight; QoS 0, 1
// and 2; wildcards and shared subscriptions (a member that leaves, or
// leaves QoS 1 messages unacknowledged for Options.SharedStallTimeout, has them
// delivered to another); retained messages with retain handling and
// retain as published; wills, with the 5.0 will delay (stored, synced,
// with the session at CONNECT; a graceful shutdown publishes those due,
// and a delayed one keeps what is left of its delay across the
// restart); topic aliases
// both ways, message expiry, user properties, content type, payload
// format (a payload its indicator declares UTF-8 and that is not is
// refused: PUBACK/PUBREC 0x99, DISCONNECT 0x99 at QoS 0, CONNACK 0x99 for
// a will), response topic and correlation data, subscription identifiers,
// No Local, Receive Maximum and Maximum Packet Size both ways, reason
// codes and strings; $SYS/broker/... statistics every
// Options.SysInterval.
//
// Memory of a waiting connection: after the CONNECT, and after any wait
// of 20 ms or more, the reader parks the decoder (packet.NewParkingDecoder)
// before it waits again, so the 1 KiB read buffer and the packets it
// decodes into go back to pools, and, when no packet starts within 50 ms
// (on TCP and TLS; at once on other streams), hands the connection to a
// fresh goroutine whose wait is an 8-byte read in a shallow frame: an idle
// connection holds one goroutine with a 2 KiB stack, not the stack its
// packets grew. A busy connection keeps its goroutine and buffer. The
// write buffer is pooled too and held only from a queued packet to its
// flush.
//
// Bounds: a packet is at most Options.MaxPacketSize, and packets larger
// than a connection's 1 KiB read buffer hold at most
// Options.MaxPacketMemory bytes across connections (a connection waits,
// unread, for room); at most
// Options.MaxConnections connections; Options.MaxInflight unacknowledged
// QoS 1/2 messages per connection (below the client's Receive Maximum);
// Options.ReceiveMaximum QoS 2 messages from a client awaiting PUBREL.
// Messages waiting for a subscriber stay in the commit log, not in
// memory; a QoS 0 subscription more than Options.MaxQoS0Lag messages
// behind skips to the newest and the skipped ones are counted
// (Stats.DroppedQoS0).
//
// Durability: a QoS 1/2 PUBLISH is in the commit log before its
// PUBACK/PUBREC. What a CONNACK, SUBACK or UNSUBACK promises is synced to
// disk before it goes: a persistent session's record, and a SUBSCRIBE's
// subscriptions with the offsets they start from and the start of a
// shared group made for them, in one batch per packet (concurrent
// batches share a sync); a retained message of QoS 1 or 2 before its
// PUBACK/PUBREC. Outbound, QoS 1 in flight is kept in memory and a
// persistent session's offsets are written at most
// Options.OffsetCommitInterval after they move (at least once: a crash
// sends the messages since again); QoS 2 state is synced at each step
// before the packet that rests on it goes, one sync per batch: a pump
// holds a pull's QoS 2 PUBLISH packets (and those behind them, to keep
// their order) until their records are synced together, and the reader
// holds the PUBREC, PUBREL and PUBCOMP of a burst until the burst's
// state (inbound ids awaiting PUBREL, outbound PUBREC and PUBCOMP) is
// synced together, before it waits for the client; retained messages of QoS 1 or 2 sent to a persistent session at
// SUBSCRIBE are stored with their content, in one synced write, and sent
// again after a restart until acknowledged.
// The reader queues its acknowledgements and writes them before it waits
// for the client (or after 256), so a burst of PUBLISH packets is
// answered in one write; the burst's QoS 0 and 1 messages that are not
// retained are stored, per engine topic (first level), in one engine
// append (at most 64 messages or 1 MiB) before any of those answers is
// queued, so a PUBACK still follows its message into the commit log
// and a connection's messages are stored in the order sent (a QoS 2 or
// retained PUBLISH, and any packet but PUBLISH, PUBACK, PUBREC, PUBCOMP
// and PINGREQ, stores the batch before it is handled).
//
// Sessions and Retained give operators a read-only view of the sessions
// (connection, protocol, persistence, subscriptions, in-flight and queued
// counts) and retained messages, taking each lock briefly; they are not
// on the message path.
//
// Concurrency: each connection has a reader goroutine (one at a time:
// a parked connection's is a fresh one), which handles every packet it
// reads, and one goroutine per non-shared subscription
// that pulls the filter's queue and writes; writes are serialized per
// connection. Each shared group has one goroutine while it has members.
// Lock order: Server.mu, then session.commitMu, then session.mu, then
// sharedGroup.mu; conn.wmu is taken alone. One goroutine checks the
// connected clients' rights again after each change of the hooks.
package server
