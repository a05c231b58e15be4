module github.com/karmanmq/karman/protocol/mqtt

go 1.26.0

require github.com/karmanmq/karman/engine v0.0.0-00010101000000-000000000000

require (
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/karmanmq/karman/filter v0.0.0-00010101000000-000000000000 // indirect
)

replace (
	github.com/karmanmq/karman/engine => ../../engine
	github.com/karmanmq/karman/filter => ../../filter
)
