module github.com/karmanmq/karman/plugins

go 1.26
