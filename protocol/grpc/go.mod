module github.com/karmanmq/karman/protocol/grpc

go 1.26
