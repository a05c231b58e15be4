module github.com/karmanmq/karman/cluster

go 1.26
