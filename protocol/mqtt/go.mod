module github.com/karmanmq/karman/protocol/mqtt

go 1.26.0

require github.com/karmanmq/karman/engine v0.0.0-00010101000000-000000000000

require (
	github.com/eclipse/paho.golang v0.23.0 // indirect
	github.com/eclipse/paho.mqtt.golang v1.5.1 // indirect
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/karmanmq/karman/filter v0.0.0-00010101000000-000000000000 // indirect
	golang.org/x/net v0.44.0 // indirect
	golang.org/x/sync v0.17.0 // indirect
)

replace (
	github.com/karmanmq/karman/engine => ../../engine
	github.com/karmanmq/karman/filter => ../../filter
)
