// Package filter will hold Karman's message filters: RocketMQ tag
// expressions ("*", "A || B") and SQL92 property expressions, parsed here and
// compiled to github.com/expr-lang/expr programs. It takes message properties
// through a small interface and never imports the engine.
package filter
