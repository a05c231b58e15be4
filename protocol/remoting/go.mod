module github.com/karmanmq/karman/protocol/remoting

go 1.26

require (
	github.com/karmanmq/karman/engine v0.0.0-00010101000000-000000000000
	github.com/karmanmq/karman/filter v0.0.0-00010101000000-000000000000
)

replace (
	github.com/karmanmq/karman/engine => ../../engine
	github.com/karmanmq/karman/filter => ../../filter
)
