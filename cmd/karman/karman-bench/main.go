// Command karman-bench measures brokers over the network: Karman side by
// side with peer brokers such as NATS JetStream. "karman bench produce"
// and "karman bench consume" run it; it is a binary of its own so that
// the karman server does not link the peers' code. Build it beside
// karman, from the repository root:
//
//	go build -o karman-bench ./cmd/karman/karman-bench
package main

import "github.com/karmanmq/karman/cmd/karman/internal/protobench"
import _ "github.com/karmanmq/karman/server/modules/standard" // the in-process server's modules

func main() { protobench.Main() }
