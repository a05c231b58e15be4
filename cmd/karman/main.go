// Command karman is a RocketMQ-compatible messaging and streaming engine
// in one binary. Run "karman serve" to start a server, "karman --help" for
// every command.
package main

import "github.com/karmanmq/karman/cmd/karman/internal/cli"
import _ "github.com/karmanmq/karman/cmd/karman/internal/frontends/namesrv" // front-end "namesrv"
import _ "github.com/karmanmq/karman/cmd/karman/internal/frontends/broker"  // front-end "broker"
import _ "github.com/karmanmq/karman/cmd/karman/internal/frontends/grpc"    // front-end "grpc"

func main() { cli.Main() }
