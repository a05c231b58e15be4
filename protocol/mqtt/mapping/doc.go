// Package mapping is the contract between MQTT and RocketMQ messages in
// Karman: how an MQTT PUBLISH is stored in the engine, and how a stored
// message, whoever sent it, is shown to MQTT subscribers.
//
// An MQTT topic "first/rest" is stored in the RocketMQ topic "first" with
// the tag "rest" (no tag when the topic has no "/"), and the properties
//
//	originMqttTopic      the full MQTT topic
//	qosLevel             the QoS it was published with, "0".."2"
//	mqttUserProps        the MQTT 5 user properties in order, duplicates
//	                     kept: a JSON array of [name, value] pairs
//	<name>               each user property whose name and value a
//	                     RocketMQ property can hold and that is not
//	                     reserved (names starting with "mqtt", those
//	                     above, and names of only A-Z, 0-9 and '_',
//	                     RocketMQ's own), the first of duplicates (so that
//	                     RocketMQ consumers filter on them with SQL92)
//	mqttPayloadFormat    MQTT 5 payload format indicator, when sent
//	mqttContentType      content type, when sent
//	mqttResponseTopic    response topic, when sent
//	mqttCorrelationData  correlation data, base64, when sent
//	mqttExpireAt         when the message expires, Unix milliseconds
//	mqttClientId         the publishing client (for No Local)
//	mqttRetain           "1" when published with RETAIN (for Retain As
//	                     Published)
//	IS_EMPTY_MSG         "true" for an empty payload, stored as one zero
//	                     byte (the engine refuses empty bodies, as
//	                     RocketMQ does)
//
// The first level must be a valid RocketMQ user topic (letters, digits,
// '%', '|', '_', '-', at most 127 bytes, not a system, retry or
// dead-letter topic); any other topic is refused with ErrTopic, which the
// server answers with reason 0x90 (MQTT 5) or by closing (3.1.1). The
// MQTT topic itself is never rewritten.
//
// A stored message reaches MQTT under originMqttTopic when it has one,
// else "first/TAG" when tagged, else "first" (Name). A message without
// qosLevel (sent by a RocketMQ client) counts as QoS 1.
//
// ToRocketMQ (and Encode, which appends to a caller's buffer) writes the
// properties in the engine's encoded form, which the engine stores as it
// is; no property map is made. FromRocketMQ maps a decoded
// message.Message; a Decoder reads the contract's properties of a stored
// record in place, for the delivery path, and gives what FromRocketMQ
// would give for it (FuzzDecoder checks that).
//
// The package holds no state and is safe for concurrent use; a Decoder
// is for one goroutine.
package mapping
