module github.com/karmanmq/karman/filter

go 1.26
