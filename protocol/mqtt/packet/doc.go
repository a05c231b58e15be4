// Package packet is the codec of MQTT 3.1 (level 3), 3.1.1 (level 4) and
// 5.0 (level 5) control packets: one struct per packet type, every MQTT 5
// property, reason codes, and the validation a broker needs to decide
// between accepting a packet, refusing it with a reason code, and closing
// the connection. It contains no network code.
//
// # Format
//
// Every packet starts with a fixed header:
//
//	 7   6   5   4   3   2   1   0
//	+---------------+---------------+
//	| type          | flags         |  PUBLISH flags: DUP, QoS (2 bits), RETAIN;
//	+---------------+---------------+  PUBREL, SUBSCRIBE, UNSUBSCRIBE: 0010; others 0000
//	| Remaining Length: varint, 1–4 bytes, 7 bits each, low first,   |
//	| bit 7 = more; at most 268,435,455                               |
//	+-----------------------------------------------------------------+
//	| variable header and payload: Remaining Length bytes             |
//	+-----------------------------------------------------------------+
//
// Integers are big-endian; strings and binary data are a u16 length and
// the bytes. An MQTT 5 property list is a varint length followed by
// (id, value) pairs in any order.
//
// # Reading
//
// [ReadPacket] reads one packet from a bufio.Reader into a fresh buffer;
// a [Decoder] reuses one (and decodes small packets in place in its
// bufio.Reader) so that reading a PUBLISH costs two allocations, the
// struct and the topic string. The version argument is the negotiated
// protocol level, 0 before the CONNECT: then only a CONNECT is accepted
// and it is decoded in the level it carries. A Decoder sets its Version
// from the CONNECT it reads.
//
// Ownership: strings are always copies. The []byte fields (Publish.Payload,
// Connect.Password, Will.Payload, Properties.CorrelationData and AuthData)
// alias the buffer the packet was decoded from: with ReadPacket and Decode
// that buffer belongs to the packet, with a Decoder it is overwritten by
// the next Read, so copy what must outlive it ([Publish.Clone],
// [Properties.Clone]; [Will.Publish] turns a will into the PUBLISH to send,
// copied).
//
// Errors: io.EOF at a clean end between packets, io.ErrUnexpectedEOF in
// the middle of one, and otherwise an [*Error] carrying the MQTT 5 reason
// code to answer (CONNACK during the CONNECT, DISCONNECT later; a 3.1.1
// server closes, or answers CONNACK return code 1 for [ErrUnsupportedVersion])
// and, for a CONNECT, the level to answer in. It matches one of
// [ErrMalformed] (0x81), [ErrProtocol] (0x82), [ErrTooLarge] (0x95),
// [ErrUnsupportedVersion] (0x84), [ErrTopicNameInvalid] (0x90) and
// [ErrTopicAliasInvalid] (0x94).
//
// What the decoder checks: packet type 0 and AUTH before MQTT 5; the fixed
// header flags of every type; QoS 3 and DUP on QoS 0; the 4-byte limit of
// Remaining Length and, in MQTT 5, its shortest form; the size limit before
// reading the body; truncation and trailing bytes; UTF-8 (including U+0000
// and surrogates) of every string; non-zero packet ids; topic names
// without wildcards (empty only with a Topic Alias in MQTT 5); property
// ids, their placement per packet type, duplicates of non-repeatable ones,
// values restricted to 0/1, zero Receive Maximum, Maximum Packet Size,
// Topic Alias and Subscription Identifier, Authentication Data without a
// Method; reason codes allowed per packet type; CONNECT protocol name and
// level, reserved flag, will flags, password without user name before
// MQTT 5; SUBSCRIBE option bits, QoS 3, Retain Handling 3, No Local on a
// $share filter; empty SUBSCRIBE, UNSUBSCRIBE, SUBACK and UNSUBACK lists.
// Topic filter syntax is left to package topic, because an MQTT 5 server
// answers a bad filter in the SUBACK rather than closing. [CheckFromClient]
// (or Decoder.FromClient) adds the direction rules: no server-only packet,
// no second CONNECT and no Subscription Identifier in a client's PUBLISH;
// [CheckFromServer] is the client's side of the same rules.
//
// # Writing
//
// Every packet has AppendTo(dst, version), which appends the encoded
// packet without allocating when dst has room, and Size(version), the
// encoded size fixed header included (the MQTT 5 packet size, to compare
// with a client's Maximum Packet Size). The encoder writes the shortest
// forms (acks and DISCONNECT without code or properties when they are
// success and empty), maps codes onto 3.1.1 where the layout differs
// (CONNACK return codes, SUBACK failures), leaves out what 3.1.1 does not
// have, and fails with [ErrEncode] on what cannot be written. A property
// is written when it is non-zero or marked with [Properties.SetPresent];
// decoding marks what it reads, so a decoded packet re-encodes as it came.
//
// # Concurrency
//
// Functions are safe for concurrent use; a packet value and a Decoder
// belong to one goroutine at a time.
package packet
