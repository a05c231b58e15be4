package message

import "net/netip"

// Message is one RocketMQ message: what a producer sends, and (once stored)
// what a consumer receives. Tags, keys and the client message id live in
// Properties under RocketMQ's property names (TAGS, KEYS, UNIQ_KEY); the
// accessors below read and write them.
type Message struct {
	Topic      string
	Body       []byte
	Flag       int32 // user flag, opaque to the broker
	SysFlag    int32 // MessageSysFlag bits (compressed, transaction state, host families)
	Properties map[string]string
	// EncodedProperties, read only while Properties is nil, holds the
	// properties in their encoded form (see DecodeProperties): a
	// front-end hands over what a client sent without decoding it, and
	// AppendStored writes it as it is. The accessors read either form;
	// the setters decode it into Properties first (see LoadProperties).
	EncodedProperties []byte

	BornTimestamp  int64 // ms since the epoch, set by the producer
	BornHost       netip.AddrPort
	ReconsumeTimes int32

	// Assigned when the message is stored.
	QueueID                   int32
	QueueOffset               int64
	CommitLogOffset           int64
	StoreTimestamp            int64 // ms since the epoch
	StoreHost                 netip.AddrPort
	PreparedTransactionOffset int64
	StoreSize                 int32 // size of the stored record in bytes
	BodyCRC                   uint32
}
