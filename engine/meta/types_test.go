package meta

import (
	"errors"
	"testing"
)

func TestMessageTypeString(t *testing.T) {
	tests := []struct {
		t    MessageType
		want string
	}{
		{MessageTypeUnspecified, "UNSPECIFIED"},
		{MessageTypeNormal, "NORMAL"},
		{MessageTypeFIFO, "FIFO"},
		{MessageTypeDelay, "DELAY"},
		{MessageTypeTransaction, "TRANSACTION"},
		{MessageTypeMixed, "MIXED"},
		{MessageType(6), "MessageType(6)"},
		{MessageType(-1), "MessageType(-1)"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("MessageType(%d).String() = %q, want %q", int32(tt.t), got, tt.want)
		}
	}
}

func TestParseMessageType(t *testing.T) {
	tests := []struct {
		in   string
		want MessageType
		ok   bool
	}{
		{"", MessageTypeUnspecified, true},
		{"  ", MessageTypeUnspecified, true},
		{"UNSPECIFIED", MessageTypeUnspecified, true},
		{"NORMAL", MessageTypeNormal, true},
		{"normal", MessageTypeNormal, true},
		{"Fifo", MessageTypeFIFO, true},
		{" DELAY\t", MessageTypeDelay, true},
		{"transaction", MessageTypeTransaction, true},
		{"MIXED", MessageTypeMixed, true},
		{"FIFOX", 0, false},
		{"NORMAL,FIFO", 0, false},
		{"1", 0, false},
		{"MessageType(6)", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseMessageType(tt.in)
		if tt.ok && (err != nil || got != tt.want) || !tt.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseMessageType(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
	// Every name reads back as its type.
	for m := MessageTypeUnspecified; m <= MessageTypeMixed; m++ {
		if got, err := ParseMessageType(m.String()); err != nil || got != m {
			t.Errorf("ParseMessageType(%q) = %v, %v", m.String(), got, err)
		}
	}
}

func TestMessageTypeAccepts(t *testing.T) {
	all := []MessageType{MessageTypeUnspecified, MessageTypeNormal, MessageTypeFIFO, MessageTypeDelay, MessageTypeTransaction, MessageTypeMixed}
	for _, topic := range all {
		for _, msg := range all {
			want := topic == MessageTypeUnspecified || topic == MessageTypeMixed || topic == msg
			if got := topic.Accepts(msg); got != want {
				t.Errorf("%v.Accepts(%v) = %v, want %v", topic, msg, got, want)
			}
		}
	}
	// Spot checks, spelled out.
	tests := []struct {
		topic, msg MessageType
		want       bool
	}{
		{MessageTypeNormal, MessageTypeFIFO, false},
		{MessageTypeFIFO, MessageTypeNormal, false},
		{MessageTypeDelay, MessageTypeDelay, true},
		{MessageTypeTransaction, MessageTypeNormal, false},
		{MessageTypeMixed, MessageTypeTransaction, true},
		{MessageTypeUnspecified, MessageTypeDelay, true},
	}
	for _, tt := range tests {
		if got := tt.topic.Accepts(tt.msg); got != tt.want {
			t.Errorf("%v.Accepts(%v) = %v, want %v", tt.topic, tt.msg, got, tt.want)
		}
	}
}

func TestPerm(t *testing.T) {
	tests := []struct {
		p                  Perm
		readable, writable bool
	}{
		{0, false, false},
		{PermInherit, false, false},
		{PermRead, true, false},
		{PermWrite, false, true},
		{PermRW, true, true},
		{PermRW | PermInherit, true, true},
	}
	for _, tt := range tests {
		if tt.p.Readable() != tt.readable || tt.p.Writable() != tt.writable {
			t.Errorf("Perm(%d): readable %v writable %v, want %v %v", tt.p, tt.p.Readable(), tt.p.Writable(), tt.readable, tt.writable)
		}
	}
	if PermRW != 6 {
		t.Fatalf("PermRW = %d, want RocketMQ's 6", PermRW)
	}
}

func TestTopicQueues(t *testing.T) {
	tests := []struct {
		r, w, want int32
	}{{4, 4, 4}, {2, 8, 8}, {8, 2, 8}, {1, 0, 1}}
	for _, tt := range tests {
		if got := (Topic{ReadQueues: tt.r, WriteQueues: tt.w}).Queues(); got != tt.want {
			t.Errorf("Queues(read %d, write %d) = %d, want %d", tt.r, tt.w, got, tt.want)
		}
	}
}

func TestGroupAttempts(t *testing.T) {
	tests := []struct {
		max, want int32
	}{
		{0, DefaultMaxAttempts},
		{-1, DefaultMaxAttempts},
		{1, 1},
		{3, 3},
		{16, 16},
		{1000, 1000},
	}
	for _, tt := range tests {
		if got := (Group{MaxAttempts: tt.max}).Attempts(); got != tt.want {
			t.Errorf("Group{MaxAttempts: %d}.Attempts() = %d, want %d", tt.max, got, tt.want)
		}
	}
	if DefaultMaxAttempts != 16 {
		t.Fatalf("DefaultMaxAttempts = %d, want RocketMQ's 16", DefaultMaxAttempts)
	}
}
