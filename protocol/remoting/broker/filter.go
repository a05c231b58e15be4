package broker

import (
	"fmt"
	"strings"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// filterFor returns the engine filter of a subscription expression: a tag
// expression ("*", "a || b") or, for expression type SQL92, an SQL92
// condition over the message's properties, which the engine compiles once
// per group, topic and expression. A nil filter passes everything.
func (b *Broker) filterFor(group, topic, exprType, expr string) (engine.Filter, error) {
	switch {
	case exprType == "" || strings.EqualFold(exprType, wire.ExpressionTag):
		return engine.TagFilter(expr)
	case strings.EqualFold(exprType, wire.ExpressionSQL92):
		return b.eng.SQLFilter(group, topic, expr)
	}
	return nil, fmt.Errorf("%w: unknown expression type %q", errSubscriptionParse, exprType)
}
