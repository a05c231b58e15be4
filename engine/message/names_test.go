package message

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopicAndGroup(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"TopicTest", true},
		{"a", true},
		{"a-b_c|d%e09AZaz", true},
		{"%RETRY%group", true},
		{"ns%topic", true},
		{strings.Repeat("x", 127), true},
		{strings.Repeat("x", 128), false},
		{"", false},
		{"has space", false},
		{"dot.ted", false},
		{"slash/", false},
		{"colon:", false},
		{"tab\t", false},
		{"nul\x00", false},
		{"héllo", false},
		{"star*", false},
		{"plus+", false},
	}
	for _, tt := range tests {
		for fname, f := range map[string]func(string) error{"ValidateTopic": ValidateTopic, "ValidateGroup": ValidateGroup} {
			err := f(tt.name)
			if (err == nil) != tt.ok {
				t.Errorf("%s(%q) = %v, want ok=%v", fname, tt.name, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidName) {
				t.Errorf("%s(%q) error %v does not wrap ErrInvalidName", fname, tt.name, err)
			}
		}
	}
}

func TestValidateUserTopic(t *testing.T) {
	tests := []struct {
		name string
		want error
	}{
		{"TopicTest", nil},
		{"ns%TopicTest", nil},
		{"", ErrInvalidName},
		{"bad name", ErrInvalidName},
		{TopicAutoCreate, ErrReservedName},
		{TopicSchedule, ErrReservedName},
		{TopicTransHalf, ErrReservedName},
		{TopicTrace, ErrReservedName},
		{"rmq_sys_anything", ErrReservedName},
		{"RMQ_SYS_ANYTHING", ErrReservedName},
		{TopicCheckpoint, ErrReservedName},
		{"%RETRY%group", ErrReservedName},
		{"%DLQ%group", ErrReservedName},
	}
	for _, tt := range tests {
		err := ValidateUserTopic(tt.name)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("ValidateUserTopic(%q) = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestTopicClassification(t *testing.T) {
	tests := []struct {
		name               string
		system, retry, dlq bool
		sendForbidden      bool
	}{
		{name: "TopicTest"},
		{name: "TBW102", system: true},
		{name: "SCHEDULE_TOPIC_XXXX", system: true, sendForbidden: true},
		{name: "RMQ_SYS_TRANS_HALF_TOPIC", system: true, sendForbidden: true},
		{name: "RMQ_SYS_TRANS_OP_HALF_TOPIC", system: true, sendForbidden: true},
		{name: "TRANS_CHECK_MAX_TIME_TOPIC", system: true, sendForbidden: true},
		{name: "RMQ_SYS_TRACE_TOPIC", system: true},
		{name: "rmq_sys_TRACE_DATA_x", system: true},
		{name: "rmq_sys_wheel_timer", system: true, sendForbidden: true},
		{name: "OFFSET_MOVED_EVENT", system: true, sendForbidden: true},
		{name: "SELF_TEST_TOPIC", system: true, sendForbidden: true},
		{name: "BenchmarkTest", system: true},
		{name: "CHECKPOINT_TOPIC", system: true},
		{name: "%RETRY%g", retry: true},
		{name: "%RETRY%g_topic", retry: true},
		{name: "%DLQ%g", dlq: true},
		{name: "x%RETRY%g"},
		{name: "tbw102"},
	}
	for _, tt := range tests {
		if got := IsSystemTopic(tt.name); got != tt.system {
			t.Errorf("IsSystemTopic(%q) = %v", tt.name, got)
		}
		if got := IsRetryTopic(tt.name); got != tt.retry {
			t.Errorf("IsRetryTopic(%q) = %v", tt.name, got)
		}
		if got := IsDLQTopic(tt.name); got != tt.dlq {
			t.Errorf("IsDLQTopic(%q) = %v", tt.name, got)
		}
		if got := IsSendForbiddenTopic(tt.name); got != tt.sendForbidden {
			t.Errorf("IsSendForbiddenTopic(%q) = %v", tt.name, got)
		}
	}
	if got := RetryTopic("g1"); got != "%RETRY%g1" || !IsRetryTopic(got) {
		t.Errorf("RetryTopic = %q", got)
	}
	if got := DLQTopic("g1"); got != "%DLQ%g1" || !IsDLQTopic(got) {
		t.Errorf("DLQTopic = %q", got)
	}
}

func TestTagHash(t *testing.T) {
	// Values of Java's "...".hashCode().
	tests := []struct {
		tag  string
		want int64
	}{
		{"", 0},
		{"a", 97},
		{"TagA", 2598919},
		{"hello", 99162322},
		{"TagA||TagB", 1789476431},
		{"polygenelubricants", -2147483648},
		{"Aa", 2112},
		{"BB", 2112},
	}
	for _, tt := range tests {
		if got := TagHash(tt.tag); got != tt.want {
			t.Errorf("TagHash(%q) = %d, want %d", tt.tag, got, tt.want)
		}
		h := Header{Properties: AppendProperties(nil, map[string]string{PropertyTags: tt.tag})}
		if tt.tag != "" {
			if got := h.TagHash(); got != tt.want {
				t.Errorf("Header.TagHash of %q = %d, want %d", tt.tag, got, tt.want)
			}
		}
	}
}
