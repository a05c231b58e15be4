// Package mqtt is the MQTT load generator of "karman bench mqtt": a lean
// client on Karman's own codec (package protocol/mqtt/packet) and the
// shapes the benchmark measures against any MQTT broker address:
//
//	p2p_qos0, p2p_qos1  N publishers → N subscribers, one topic per pair
//	fanout              1 publisher → 1,000 subscribers of one topic;
//	                    msgs_per_sec counts deliveries
//	shared              100 publishers → 4 members of one shared
//	                    subscription ($share/bench/...)
//	idle                --connections idle connections, spread over
//	                    worker processes and source addresses 127.0.0.x
//
// Every payload starts with the send time (8 bytes, Unix nanoseconds), so
// latency runs from the publisher's write to the subscriber's read, both
// in this process. A phase ends when every expected delivery arrived, or
// when none arrived for Options.DrainTimeout after the publishers
// finished; the missing deliveries are reported as lost. rss_mb is the
// broker's resident memory at the end of the phase, when its process is
// known (a peer started here, or --pid).
//
// StartMosquitto runs Debian's mosquitto as the peer broker. Phases run
// one after the other; nothing here is meant for concurrent use except
// Conn, whose writes are safe from several goroutines.
package mqtt
