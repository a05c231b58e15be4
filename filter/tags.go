package filter

import (
	"fmt"
	"strings"
)

// Tags is a parsed RocketMQ tag expression: "*" (or empty) for every
// message, or "A || B || C" for messages whose tag is one of those.
type Tags struct {
	all    bool
	tags   []string
	hashes []int64
}

// ParseTags parses a tag expression. Blank alternatives are ignored, as the
// RocketMQ clients do; an expression with no tag at all is an error.
func ParseTags(expr string) (*Tags, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return &Tags{all: true}, nil
	}
	t := &Tags{}
	for part := range strings.SplitSeq(expr, "||") {
		tag := strings.TrimSpace(part)
		if tag == "" {
			continue
		}
		if tag == "*" {
			return &Tags{all: true}, nil
		}
		t.tags = append(t.tags, tag)
		t.hashes = append(t.hashes, TagHash(tag))
	}
	if len(t.tags) == 0 {
		return nil, fmt.Errorf("filter: tag expression %q names no tag", expr)
	}
	return t, nil
}

// All reports whether the expression matches every message.
func (t *Tags) All() bool { return t.all }

// List returns the tags the expression names (none for "*").
func (t *Tags) List() []string { return t.tags }

// MatchTagHash reports whether a message whose tag hashes to h may match.
func (t *Tags) MatchTagHash(h int64) bool {
	if t.all {
		return true
	}
	for _, x := range t.hashes {
		if x == h {
			return true
		}
	}
	return false
}

// MatchTag reports whether a message with tag matches.
func (t *Tags) MatchTag(tag []byte) bool {
	if t.all {
		return true
	}
	for _, x := range t.tags {
		if x == string(tag) {
			return true
		}
	}
	return false
}

// TagHash is the hash RocketMQ keeps for a tag in its consume queues: Java's
// String.hashCode over the tag's bytes, widened to int64. A message without
// a tag hashes to 0.
func TagHash[S ~string | ~[]byte](tag S) int64 {
	var h int32
	for i := 0; i < len(tag); i++ {
		h = 31*h + int32(tag[i])
	}
	return int64(h)
}
