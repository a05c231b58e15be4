package wire

import (
	"hash/maphash"
	"strconv"
	"sync/atomic"
)

// internTable holds strings that appear in nearly every header, so that
// decoding them does not allocate. Lookups with a []byte converted in
// place do not allocate either.
var internTable = func() map[string]string {
	words := []string{
		// values
		"", "0", "1", "2", "3", "4", "-1", "true", "false", "TBW102", "TAG", "SQL92", "*",
		"20000", "32", "DefaultRegion", "JSON",
		// keys
		"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId",
		"sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
		"maxReconsumeTimes", "batch", "bname", "brokerName",
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n",
		"consumerGroup", "queueOffset", "maxMsgNums", "commitOffset", "suspendTimeoutMillis",
		"subscription", "subVersion", "expressionType", "maxMsgBytes",
		"msgId", "transactionId", "batchUniqId", "MSG_REGION", "TRACE_ON",
		"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId", "offsetDelta",
		"topicSysFlag", "groupSysFlag", "forbiddenType",
		"offset", "group", "delayLevel", "originMsgId", "originTopic",
		"tranStateTableOffset", "commitLogOffset", "commitOrRollback", "fromTransactionCheck",
		"offsetMsgId", "timestamp", "setZeroIfNotFound", "clientId", "clientID",
		"ns", "nsd", "oway", "lo",
	}
	m := make(map[string]string, len(words))
	for _, w := range words {
		m[w] = w
	}
	return m
}()

// maxInterned is the length of the longest string in internTable: longer
// ones are not looked up.
var maxInterned = func() int {
	n := 0
	for w := range internTable {
		n = max(n, len(w))
	}
	return n
}()

func intern(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	if s, ok := internTable[string(b)]; ok {
		return s
	}
	return string(b)
}

// nameCache holds names decoded lately (topics, groups, brokers,
// subscriptions), so that decoding the same name again does not allocate:
// a connection sends the same few names in every request. Each slot keeps
// the last name that hashed to it; the table's size bounds its memory.
var nameCache [1024]atomic.Pointer[string]

var nameSeed = maphash.MakeSeed()

// maxCachedName is the length of the longest name nameCache keeps.
const maxCachedName = 128

// internName returns b as a string, from nameCache when it holds it.
func internName(b []byte) string {
	if len(b) == 0 || len(b) > maxCachedName {
		return string(b)
	}
	slot := &nameCache[maphash.Bytes(nameSeed, b)%uint64(len(nameCache))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
