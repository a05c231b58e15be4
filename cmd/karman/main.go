// Command karman is a RocketMQ-compatible messaging and streaming engine
// in one binary. Run "karman serve" to start a server, "karman --help" for
// every command.
//
// It is the command line of package karmancmd with the standard set of
// server modules; a custom binary imports karmancmd and the modules it
// wants instead.
package main

import (
	karmancmd "github.com/karmanmq/karman/cmd/karman/karmancmd"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

func main() { karmancmd.Main() }
