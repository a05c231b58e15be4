// Package message defines the RocketMQ message as Karman stores and serves
// it, and the pure codecs around it: the properties string, the stored
// record ("V1" stored message format, the body of pull responses and the
// unit the commit log holds), offset message ids, client unique message ids,
// and the naming rules for topics and groups.
//
// The package has no I/O, no logging and no dependencies outside the
// standard library; front-ends and the store share it so that every part of
// the broker reads and writes messages the same way.
//
// # Stored record
//
// A stored record is a sequence of big-endian fields with no padding. Java
// and Go RocketMQ clients decode it field by field, so nothing may be added
// or left out. Hosts are four IPv4 bytes, or sixteen IPv6 bytes when the
// matching SYSFLAG bit is set (SysFlagBornHostV6, SysFlagStoreHostV6), each
// followed by a 4-byte port.
//
//	 offset  size  field
//	+------+-----+-----------------------------------------------------+
//	|    0 |   4 | TOTALSIZE       int32, length of the whole record   |
//	|    4 |   4 | MAGICCODE       0xDAA320A7 (V1)                     |
//	|    8 |   4 | BODYCRC         CRC-32 (IEEE) of BODY & 0x7FFFFFFF  |
//	|   12 |   4 | QUEUEID         int32                               |
//	|   16 |   4 | FLAG            int32, user flag                    |
//	|   20 |   8 | QUEUEOFFSET     int64, consume-queue offset         |
//	|   28 |   8 | PHYSICALOFFSET  int64, commit-log offset            |
//	|   36 |   4 | SYSFLAG         int32, SysFlag* bits                |
//	|   40 |   8 | BORNTIMESTAMP   int64, ms since the epoch           |
//	|   48 | 8/20| BORNHOST        IPv4 (4) or IPv6 (16) + int32 port  |
//	|  B+0 |   8 | STORETIMESTAMP  int64, ms since the epoch           |
//	|  B+8 | 8/20| STOREHOST       IPv4 (4) or IPv6 (16) + int32 port  |
//	|  S+0 |   4 | RECONSUMETIMES  int32                               |
//	|  S+4 |   8 | PREPAREDTRANSACTIONOFFSET int64                     |
//	| S+12 | 4+L | BODY            int32 length L, then L bytes        |
//	|      | 1+T | TOPIC           uint8 length T, then T bytes        |
//	|      | 2+P | PROPERTIES      int16 length P, then P bytes        |
//	+------+-----+-----------------------------------------------------+
//	B = 56 (IPv4 born host) or 68 (IPv6); S = B + 16 or B + 28.
//
// A record with two IPv4 hosts and an empty body, topic and properties
// string is 91 bytes long. The topic is at most 255 bytes and the
// properties string at most 32767 bytes (clients read its length signed).
// The body is stored as sent: a compressed body keeps SysFlagCompressed and
// is never inflated here.
//
// # Properties string
//
// Properties are written as key 0x01 value 0x02 for every pair, the last one
// included, in map order. Keys and values must not contain 0x01 or 0x02.
// A message may instead carry its properties encoded, as a client sent
// them (Message.EncodedProperties); they are then written as they are,
// provided they follow the same form (CheckEncodedProperties). A name may
// then appear twice; every reader takes the later value.
//
// # Concurrency
//
// Every function in the package is pure and safe for concurrent use on
// distinct data. A *Message, like a map, must not be changed while another
// goroutine reads it. A Generator is safe for concurrent use; all
// Generators of a process share one clock, so their ids never collide.
package message
