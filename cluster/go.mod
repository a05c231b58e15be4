module github.com/karmanmq/karman/cluster

go 1.26.0

replace (
	github.com/karmanmq/karman/engine => ../engine
	github.com/karmanmq/karman/filter => ../filter
)

require github.com/karmanmq/karman/engine v0.0.0-00010101000000-000000000000
