// Package standard imports the standard set of modules of the karman
// binary, each of which registers itself with server.Default:
// frontend.namesrv (the RocketMQ name server), frontend.remoting (the
// remoting broker), frontend.grpc (the RocketMQ 5 gRPC endpoint),
// frontend.mqtt (the MQTT 3.1.1 and 5.0 front-end), plugin.process
// (process plugins given with --plugin) and auth.acl (the access-control
// list, with --auth).
//
// A custom binary imports it (blank) to get them all, or imports the
// module packages it wants one by one.
package standard

import (
	_ "github.com/karmanmq/karman/server/modules/auth"    // auth.acl
	_ "github.com/karmanmq/karman/server/modules/broker"  // frontend.remoting
	_ "github.com/karmanmq/karman/server/modules/grpc"    // frontend.grpc
	_ "github.com/karmanmq/karman/server/modules/mqtt"    // frontend.mqtt
	_ "github.com/karmanmq/karman/server/modules/namesrv" // frontend.namesrv
	_ "github.com/karmanmq/karman/server/modules/plugin"  // plugin.process
)
