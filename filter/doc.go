// Package filter holds Karman's message filters: RocketMQ tag expressions
// ("*", "A || B") today, SQL92 property expressions next. It never imports
// the engine; the engine adapts these filters to its pull and pop paths.
//
// Parsed filters are immutable and safe for concurrent use.
package filter
