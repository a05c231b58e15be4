package wire

import (
	"fmt"
	"strings"
)

// Topic filter types of CreateTopicRequestHeader.
const (
	TopicFilterSingleTag = "SINGLE_TAG"
	TopicFilterMultiTag  = "MULTI_TAG"
)

// CreateTopicRequestHeader is the header of UPDATE_AND_CREATE_TOPIC (17).
// Required: topic, defaultTopic, readQueueNums, writeQueueNums, perm,
// topicFilterType.
type CreateTopicRequestHeader struct {
	Topic           string // topic
	DefaultTopic    string // defaultTopic
	ReadQueueNums   int32  // readQueueNums, >= 0
	WriteQueueNums  int32  // writeQueueNums, >= 0
	Perm            int32  // perm: Perm* bits
	TopicFilterType string // topicFilterType: TopicFilterSingleTag or TopicFilterMultiTag
	TopicSysFlag    int32  // topicSysFlag, optional
	Order           bool   // order, optional
	// Attributes (attributes, Java 5) are changes such as
	// "+message.type=FIFO" or "-key", comma-separated on the wire.
	Attributes []TopicAttribute
	Force      bool // force, optional
}

// DecodeFields implements Header.
func (h *CreateTopicRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("CreateTopicRequestHeader", ext)
	h.Topic = r.nonEmpty("topic")
	h.DefaultTopic = r.str(true, "defaultTopic")
	h.ReadQueueNums = r.i32(true, 0, "readQueueNums")
	if h.ReadQueueNums < 0 {
		r.invalid([]string{"readQueueNums"}, ext["readQueueNums"], "must not be negative")
	}
	h.WriteQueueNums = r.i32(true, 0, "writeQueueNums")
	if h.WriteQueueNums < 0 {
		r.invalid([]string{"writeQueueNums"}, ext["writeQueueNums"], "must not be negative")
	}
	h.Perm = r.i32(true, 0, "perm")
	if h.Perm&^(PermPriority|PermRead|PermWrite|PermInherit) != 0 {
		r.invalid([]string{"perm"}, ext["perm"], "want a combination of 8 (priority), 4 (read), 2 (write), 1 (inherit)")
	}
	h.TopicFilterType = r.str(true, "topicFilterType")
	if _, ok := ext["topicFilterType"]; ok && h.TopicFilterType != TopicFilterSingleTag && h.TopicFilterType != TopicFilterMultiTag {
		r.invalid([]string{"topicFilterType"}, h.TopicFilterType, "want SINGLE_TAG or MULTI_TAG")
	}
	h.TopicSysFlag = r.i32(false, 0, "topicSysFlag")
	h.Order = r.boolean(false, false, "order")
	h.Attributes = nil
	if v := r.str(false, "attributes"); v != "" {
		attrs, err := ParseTopicAttributes(v)
		if err != nil {
			r.invalid([]string{"attributes"}, v, err.Error())
		}
		h.Attributes = attrs
	}
	h.Force = r.boolean(false, false, "force")
	return r.err
}

// EncodeFields implements Header.
func (h *CreateTopicRequestHeader) EncodeFields(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["defaultTopic"] = h.DefaultTopic
	putI32(ext, "readQueueNums", h.ReadQueueNums)
	putI32(ext, "writeQueueNums", h.WriteQueueNums)
	putI32(ext, "perm", h.Perm)
	ext["topicFilterType"] = h.TopicFilterType
	putI32(ext, "topicSysFlag", h.TopicSysFlag)
	putBool(ext, "order", h.Order)
	putOpt(ext, "attributes", FormatTopicAttributes(h.Attributes))
	if h.Force {
		ext["force"] = "true"
	}
}

// TopicAttribute is one change in a topic's attributes string: set Key to
// Value ("+key=value") or, with Delete, remove Key ("-key").
type TopicAttribute struct {
	Key    string
	Value  string
	Delete bool
}

// ParseTopicAttributes parses "+key=value,-key,..." as Java's
// AttributeParser does: every item starts with + (then key=value, both
// non-empty) or - (then a key), and keys are unique. An empty string
// yields no attributes.
func ParseTopicAttributes(s string) ([]TopicAttribute, error) {
	if s == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	out := make([]TopicAttribute, 0, len(items))
	seen := make(map[string]struct{}, len(items))
	for _, item := range items {
		var a TopicAttribute
		switch {
		case strings.HasPrefix(item, "+"):
			k, v, ok := strings.Cut(item[1:], "=")
			if !ok || k == "" || v == "" || strings.Contains(v, "=") {
				return nil, fmt.Errorf("attribute %q: want +key=value", item)
			}
			a = TopicAttribute{Key: k, Value: v}
		case strings.HasPrefix(item, "-"):
			k := item[1:]
			if k == "" || strings.Contains(k, "=") {
				return nil, fmt.Errorf("attribute %q: want -key", item)
			}
			a = TopicAttribute{Key: k, Delete: true}
		default:
			return nil, fmt.Errorf("attribute %q: want +key=value or -key", item)
		}
		if _, dup := seen[a.Key]; dup {
			return nil, fmt.Errorf("attribute key %q appears twice", a.Key)
		}
		seen[a.Key] = struct{}{}
		out = append(out, a)
	}
	return out, nil
}

// FormatTopicAttributes is the inverse of ParseTopicAttributes.
func FormatTopicAttributes(attrs []TopicAttribute) string {
	var b strings.Builder
	for i, a := range attrs {
		if i > 0 {
			b.WriteByte(',')
		}
		if a.Delete {
			b.WriteByte('-')
			b.WriteString(a.Key)
			continue
		}
		b.WriteByte('+')
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(a.Value)
	}
	return b.String()
}

// DeleteSubscriptionGroupRequestHeader is the header of
// DELETE_SUBSCRIPTIONGROUP (207). Required: groupName.
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName   string // groupName
	CleanOffset bool   // cleanOffset, optional
}

// DecodeFields implements Header.
func (h *DeleteSubscriptionGroupRequestHeader) DecodeFields(ext map[string]string) error {
	r := newFieldReader("DeleteSubscriptionGroupRequestHeader", ext)
	h.GroupName = r.nonEmpty("groupName")
	h.CleanOffset = r.boolean(false, false, "cleanOffset")
	return r.err
}

// EncodeFields implements Header.
func (h *DeleteSubscriptionGroupRequestHeader) EncodeFields(ext map[string]string) {
	ext["groupName"] = h.GroupName
	putBool(ext, "cleanOffset", h.CleanOffset)
}
