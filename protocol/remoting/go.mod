module github.com/karmanmq/karman/protocol/remoting

go 1.26
