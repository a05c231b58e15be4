module github.com/karmanmq/karman/protocol/mqtt

go 1.26
