module github.com/karmanmq/karman/bench

go 1.26
