package message

import (
	"fmt"
	"strings"

	"github.com/karmanmq/karman/filter"
)

// MaxNameLength is the longest topic or group name ValidateTopic and
// ValidateGroup accept: RocketMQ's topic limit, above which Java brokers
// switch to the V2 stored format.
const MaxNameLength = 127

// Topic names and prefixes with a meaning to the broker.
const (
	TopicAutoCreate        = "TBW102"                      // template of auto-created topics
	TopicSchedule          = "SCHEDULE_TOPIC_XXXX"         // delay-level messages; queue = level-1
	TopicTransHalf         = "RMQ_SYS_TRANS_HALF_TOPIC"    // prepared transactional messages
	TopicTransOpHalf       = "RMQ_SYS_TRANS_OP_HALF_TOPIC" // op log of committed/rolled-back half messages
	TopicTransCheckMaxTime = "TRANS_CHECK_MAX_TIME_TOPIC"  // half messages that ran out of checks
	TopicTrace             = "RMQ_SYS_TRACE_TOPIC"         // default message-trace topic
	TopicTimer             = "rmq_sys_wheel_timer"         // timer (arbitrary delay) messages
	TopicSelfTest          = "SELF_TEST_TOPIC"
	TopicOffsetMovedEvent  = "OFFSET_MOVED_EVENT"
	TopicBenchmark         = "BenchmarkTest"
	TopicCheckpoint        = "CHECKPOINT_TOPIC"

	SystemTopicPrefix      = "rmq_sys_"
	SystemTopicPrefixUpper = "RMQ_SYS_"
	TraceDataTopicPrefix   = "rmq_sys_TRACE_DATA_" // custom message-trace topics
	RetryTopicPrefix       = "%RETRY%"
	DLQTopicPrefix         = "%DLQ%"
	ReplyTopicSuffix       = "_REPLY_TOPIC" // request/reply topic: <cluster>_REPLY_TOPIC
)

// GroupTools is the consumer group RocketMQ's tools (mqadmin, the
// dashboard, karman admin) read queues as, and never commit offsets for.
// Java brokers keep it from the start (MixAll.TOOLS_CONSUMER_GROUP).
const GroupTools = "TOOLS_CONSUMER"

// validNameChar[c] reports whether byte c may appear in a topic or group
// name: the class [%|a-zA-Z0-9_-].
var validNameChar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "%|_-" {
		t[c] = true
	}
	return t
}()

func validateName(kind, name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty %s name", ErrInvalidName, kind)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: %s %q longer than %d characters", ErrInvalidName, kind, name, MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !validNameChar[name[i]] {
			return fmt.Errorf("%w: %s %q contains %q; allowed are [%%|a-zA-Z0-9_-]", ErrInvalidName, kind, name, name[i])
		}
	}
	return nil
}

// ValidateTopic checks the naming rules of RocketMQ topics: non-empty, at
// most MaxNameLength characters, all of them in [%|a-zA-Z0-9_-]. Errors wrap
// ErrInvalidName. It accepts system, retry and dead-letter topics; see
// ValidateUserTopic.
func ValidateTopic(name string) error {
	return validateName("topic", name)
}

// ValidateGroup checks a producer or consumer group name with the rules of
// ValidateTopic. Errors wrap ErrInvalidName.
func ValidateGroup(name string) error {
	return validateName("group", name)
}

// ValidateUserTopic checks a topic an ordinary user creates or sends to:
// ValidateTopic's rules, and not a system topic (IsSystemTopic), retry
// topic or dead-letter topic, which are refused with ErrReservedName.
//
// Some clients do send to reserved topics on purpose: message tracing
// sends to TopicTrace or a TraceDataTopicPrefix topic, and Java consumers
// fall back to sending a failed message to their retry topic. A front-end
// that serves those paths checks them with ValidateTopic and
// IsSendForbiddenTopic instead.
func ValidateUserTopic(name string) error {
	if err := ValidateTopic(name); err != nil {
		return err
	}
	switch {
	case IsSystemTopic(name):
		return fmt.Errorf("%w: %q is a system topic", ErrReservedName, name)
	case IsRetryTopic(name):
		return fmt.Errorf("%w: %q is a retry topic", ErrReservedName, name)
	case IsDLQTopic(name):
		return fmt.Errorf("%w: %q is a dead-letter topic", ErrReservedName, name)
	}
	return nil
}

// IsSystemTopic reports whether name is one of RocketMQ's system topics or
// starts with SystemTopicPrefix or SystemTopicPrefixUpper. Retry and
// dead-letter topics are not system topics.
func IsSystemTopic(name string) bool {
	switch name {
	case TopicAutoCreate, TopicSchedule, TopicTransHalf, TopicTransOpHalf,
		TopicTransCheckMaxTime, TopicTrace, TopicTimer, TopicSelfTest,
		TopicOffsetMovedEvent, TopicBenchmark, TopicCheckpoint:
		return true
	}
	return strings.HasPrefix(name, SystemTopicPrefix) || strings.HasPrefix(name, SystemTopicPrefixUpper)
}

// IsSendForbiddenTopic reports whether no client may send to name: the
// broker's internal topics (scheduling, timers, transactions, self test,
// offset-moved events), as Java brokers refuse them.
func IsSendForbiddenTopic(name string) bool {
	switch name {
	case TopicSchedule, TopicTimer, TopicTransHalf, TopicTransOpHalf,
		TopicTransCheckMaxTime, TopicSelfTest, TopicOffsetMovedEvent:
		return true
	}
	return false
}

// IsRetryTopic reports whether name is a retry topic ("%RETRY%<group>",
// including POP retry topics "%RETRY%<group>_<topic>" and
// "%RETRY%<group>+<topic>").
func IsRetryTopic(name string) bool {
	return strings.HasPrefix(name, RetryTopicPrefix)
}

// IsDLQTopic reports whether name is a dead-letter topic ("%DLQ%<group>").
func IsDLQTopic(name string) bool {
	return strings.HasPrefix(name, DLQTopicPrefix)
}

// RetryTopic returns the retry topic of a consumer group.
func RetryTopic(group string) string {
	return RetryTopicPrefix + group
}

// DLQTopic returns the dead-letter topic of a consumer group.
func DLQTopic(group string) string {
	return DLQTopicPrefix + group
}

// TagHash returns the tag hash code kept in consume-queue entries and
// compared by tag filters; see filter.TagHash, which defines it.
func TagHash(tag string) int64 { return filter.TagHash(tag) }
