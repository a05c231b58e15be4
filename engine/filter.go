package engine

import (
	"fmt"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/filter"
)

// TagFilter returns the Filter of a RocketMQ tag expression ("*", "A",
// "A || B"). It returns nil, which passes everything, for "*" and "".
func TagFilter(expr string) (Filter, error) {
	t, err := filter.ParseTags(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if t.All() {
		return nil, nil
	}
	return tagFilter{t}, nil
}

type tagFilter struct{ tags *filter.Tags }

func (f tagFilter) MatchTagHash(h int64) bool { return f.tags.MatchTagHash(h) }

func (f tagFilter) Match(props []byte) bool {
	tag, _ := message.LookupProperty(props, message.PropertyTags)
	return f.tags.MatchTag(tag)
}
