package wire

import "strconv"

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

func itoa(n int) string { return strconv.Itoa(n) }
