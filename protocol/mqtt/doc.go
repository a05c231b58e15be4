// Package mqtt is Karman's MQTT 3.1.1 and 5.0 front-end, on the engine:
// no second store, no bridge. Its packages, one job each:
//
//	packet   the wire codec (every packet type and property), no network code
//	topic    topic names and filters, $share parsing, Match and a matching tree
//	mapping  the contract between MQTT and RocketMQ messages
//	route    the engine.Router that routes stored messages to filter queues
//	server   connections, sessions, QoS, retained messages, wills, $SYS
//
// The module frontend.mqtt (server/modules/mqtt) serves it over TCP,
// WebSocket and TLS.
//
// # Storage: one write, any fan-out
//
// A PUBLISH is stored once, in the commit log, as a RocketMQ message of
// the topic named by its first level, tagged with the rest (package
// mapping). QoS 1 and 2 are appended before PUBACK/PUBREC. Nothing is
// copied per subscriber: every distinct topic filter that a session
// subscribes to has one light queue, and the engine, as it indexes each
// record, asks the router (engine.Options.Router) which filter queues the
// record's MQTT name matches and indexes the record into each of them.
// Messages from RocketMQ producers (remoting or gRPC) go the same way, so
// they reach MQTT subscribers under originMqttTopic, else topic/TAG, else
// topic. With no router installed the engine's hook point is a nil check.
//
//	PUBLISH a/b/c ──► commit log record (topic a, tag b/c)
//	                     │ dispatch: router.Route(a, b/c, originMqttTopic)
//	                     ├──► consume queue a/<n>          (RocketMQ consumers)
//	                     ├──► %LMQ%mqtt_<hash("a/#")>      (filter a/#)
//	                     └──► %LMQ%mqtt_<hash("+/b/+")>    (filter +/b/+)
//
// A session keeps, per subscription, an offset in its filter's queue, as
// a consumer group does per queue; a new subscription starts at the
// queue's end. A shared subscription $share/G/F reads F's queue with one
// offset for the group and hands each message to one member.
//
// # State in the engine
//
// Sessions, retained messages and wills are engine state (engine.State,
// namespace "mqtt", in the metadata store), written before the
// acknowledgement a QoS ≥ 1 promise rests on, so they survive kill -9:
//
//	r/<filter>           a routed filter (loaded before the log is replayed)
//	s/<client>           a persistent session: version, expiry, subscriptions
//	o/<client>\0<filter> the subscription's committed queue offset
//	i/<client>\0<pid>    an outbound QoS 2 (or shared) message in flight: queue offset, PUBREL sent
//	d/<client>\0<filter>\0<offset> a QoS 2 message completed past the committed offset
//	q/<client>\0<pid>    an inbound QoS 2 message stored, awaiting PUBREL
//	g/<group>\0<filter>  a shared subscription's committed offset
//	t/<topic>            a retained message
//	w/<client>           the will of a live connection (published at the next
//	                     start if the process dies)
//
// Outbound QoS 1 is at least once, so its window lives in memory: an
// acknowledgement moves the subscription's offset in memory, and the
// offset is written within Options.OffsetCommitInterval (100 ms), when
// the connection ends and when the server stops; after a crash the
// messages from the last written offset come again. QoS 2 state is
// written at every step: PUBLISH (i/), PUBREC, and PUBCOMP, which moves
// the offset, or, when QoS 1 messages before it are still in flight,
// marks the message done (d/) so that it is never sent twice.
//
// QoS 2 inbound is "method B": the message is appended at the first
// PUBLISH and its packet id noted in the session; a resent PUBLISH (DUP)
// before PUBREL is acknowledged again and not stored, across reconnects
// and restarts. Outbound, a message is resent after a reconnect with DUP
// and the same packet id, and one whose PUBREC came gets PUBREL only.
package mqtt
