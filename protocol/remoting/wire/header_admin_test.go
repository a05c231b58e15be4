package wire

import (
	"errors"
	"testing"
)

func TestAdminHeaders(t *testing.T) {
	for _, h := range []Header{
		&GetConsumerConnectionListRequestHeader{ConsumerGroup: "cg"},
		&GetConsumeStatsRequestHeader{ConsumerGroup: "cg", Topic: "T"},
		&GetConsumeStatsRequestHeader{ConsumerGroup: "cg"},
		&GetTopicStatsInfoRequestHeader{Topic: "T"},
	} {
		ext := map[string]string{}
		h.EncodeFields(ext)
		var got Header
		switch h.(type) {
		case *GetConsumerConnectionListRequestHeader:
			got = &GetConsumerConnectionListRequestHeader{}
		case *GetConsumeStatsRequestHeader:
			got = &GetConsumeStatsRequestHeader{}
		case *GetTopicStatsInfoRequestHeader:
			got = &GetTopicStatsInfoRequestHeader{}
		}
		if err := got.DecodeFields(ext); err != nil {
			t.Fatalf("%T: %v", h, err)
		}
		if !equalHeaders(got, h) {
			t.Errorf("round trip of %#v gave %#v", h, got)
		}
		if err := got.DecodeFields(map[string]string{}); !errors.Is(err, ErrMissingField) {
			t.Errorf("%T without fields: %v", h, err)
		}
	}
}

func equalHeaders(a, b Header) bool {
	switch a := a.(type) {
	case *GetConsumerConnectionListRequestHeader:
		return *a == *b.(*GetConsumerConnectionListRequestHeader)
	case *GetConsumeStatsRequestHeader:
		return *a == *b.(*GetConsumeStatsRequestHeader)
	case *GetTopicStatsInfoRequestHeader:
		return *a == *b.(*GetTopicStatsInfoRequestHeader)
	}
	return false
}
