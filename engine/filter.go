package engine

import (
	"fmt"
	"unsafe"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/filter"
)

// TagFilter returns the Filter of a RocketMQ tag expression ("*", "A",
// "A || B"). It returns nil, which passes everything, for "*" and "".
func TagFilter(expr string) (Filter, error) {
	t, err := filter.ParseTags(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFilter, err)
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

// sqlCacheSize bounds the compiled SQL92 filters kept per engine.
const sqlCacheSize = 4096

// SQLFilter returns the Filter of a RocketMQ SQL92 expression subscribed by
// group on topic. Compiled filters are cached per (group, topic,
// expression), so a consumer's repeated pulls compile it once. An invalid
// expression gets an error matching ErrInvalidFilter that gives the
// position; with Options.DisableSQLFilter set every SQL92 filter is refused
// with ErrFilterDisabled.
func (e *Engine) SQLFilter(group, topic, expr string) (Filter, error) {
	if e.opts.DisableSQLFilter {
		return nil, fmt.Errorf("%w: SQL92 filtering is switched off on this broker", ErrFilterDisabled)
	}
	sql, err := e.sqlFilters.Get(group, topic, expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFilter, err)
	}
	return sqlFilter{sql}, nil
}

type sqlFilter struct{ sql *filter.SQL }

func (sqlFilter) MatchTagHash(int64) bool { return true }

func (f sqlFilter) Match(props []byte) bool { return f.sql.Match(encodedProperties(props)) }

// encodedProperties reads properties straight from a stored record's
// encoded properties. The strings it returns alias the record: they are
// valid only while the filter evaluates, which never keeps them.
type encodedProperties []byte

func (p encodedProperties) Get(name string) (string, bool) {
	v, ok := message.LookupProperty(p, name)
	if !ok || len(v) == 0 {
		return "", ok
	}
	return unsafe.String(&v[0], len(v)), true
}
