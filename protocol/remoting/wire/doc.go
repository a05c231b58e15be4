// Package wire is the codec of the RocketMQ remoting protocol: frames,
// command headers in both serialize types, request and response codes,
// typed views of the extFields of the common requests, and the JSON and
// binary bodies those requests carry. It contains no network code.
//
// # Frame
//
// Every command travels as one frame; all integers are big-endian.
//
//	 0               4   5           8
//	+---------------+---+-----------+----------------+--------------+
//	| length        | T | headerLen | header         | body         |
//	| int32         |u8 | uint24    | headerLen      | the rest     |
//	+---------------+---+-----------+----------------+--------------+
//	length    = 4 + headerLen + len(body): the bytes after the prefix
//	T         = serialize type of the header: 0 JSON, 1 ROCKETMQ
//
// [Command.AppendTo] writes whole frames, length prefix included.
// [Decode] takes the bytes after the length prefix (length bytes, which is
// what [Reader.ReadFrame] returns); [DecodeFrame] takes a whole frame.
//
// # JSON header (type 0)
//
// One JSON object:
//
//	{"code":10,"language":"GO","version":317,"opaque":1,"flag":0,
//	 "remark":"","extFields":{"topic":"TopicA","queueId":"1",...},
//	 "serializeTypeCurrentRPC":"JSON"}
//
// code, version, opaque and flag are numbers, language is the name of the
// sender's language, and every extFields value is a string. The encoder
// always writes that shape (keys of extFields in sorted order, control
// characters escaped as \u00XX, invalid UTF-8 replaced by U+FFFD). The
// decoder is lenient about what peers send: unknown keys are skipped,
// language may be a name (any case) or a number, code and friends may be
// quoted numbers, and extFields values may be numbers, booleans (kept as
// their JSON text) or null (dropped). [DecodeOptions.StrictExtFields]
// turns the extFields leniency off, which is how the Go client behaves.
//
// # ROCKETMQ header (type 1)
//
//	+------+------+---------+--------+------+-----+--------+-----+--------+
//	| code | lang | version | opaque | flag | R   | remark | E   | ext    |
//	| i16  | u8   | i16     | i32    | i32  | i32 | R      | i32 | E      |
//	+------+------+---------+--------+------+-----+--------+-----+--------+
//	ext = repeated { keyLen i16, key, valueLen i32, value }
//
// # Codes wider than 16 bits
//
// Command.Code and Command.Version are int32 because the Java broker
// declares them as int and JSON headers carry any int. The binary header
// has only 16 bits for each: Java casts with (short) on write and
// sign-extends on read. Java 5.0 defined the POP codes as 200050 and up,
// which a binary header silently turned into 3442 and up; later Java
// releases renamed the constants to those 16-bit values. This package
// defines the 16-bit values, [RequestCode.Canonical] maps the old wide
// values onto them, and [Command.AppendTo] refuses (with [ErrOutOfRange])
// to write a binary header whose code or version does not fit in 16 bits
// rather than truncate it.
//
// # Flags
//
// Bit 0 of flag ([FlagResponse]) marks responses, bit 1 ([FlagOneway]) a
// request that wants no answer. The Go client never sets bit 1 on its
// "oneway" sends, so a server answers every request without bit 1.
//
// # Concurrency
//
// Functions in this package are safe for concurrent use; values are not.
// A [Command] belongs to one goroutine at a time. A decoded Command's Body
// aliases the frame it was decoded from; [Reader] hands out a fresh buffer
// for every frame, so commands it returns stay valid after later reads.
// A [Reader] must be used by one goroutine at a time.
package wire
