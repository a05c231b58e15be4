// Package topic holds the MQTT topic rules (§4.7 of 3.1.1 and 5.0): which
// topic names and filters are valid, shared subscriptions
// ($share/GROUP/FILTER, MQTT 5 §4.8.2), whether a filter matches a name,
// and a subscription [Tree] that finds every filter matching a name.
//
// Names and filters are compared byte for byte and never normalized:
// "a/b", "a/b/", "/a/b" and "a//b" are four different topics, and empty
// levels count. In a filter "+" is exactly one level (possibly empty) and
// "#" the rest, including none: "a/#" matches "a". A filter starting with
// a wildcard never matches a name starting with "$" ($SYS topics);
// "$SYS/#" does.
//
// Functions are safe for concurrent use. A Tree is safe for concurrent use
// by many readers (Match) and writers (Add, Remove): readers share a read
// lock and never block each other.
package topic
