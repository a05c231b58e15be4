// Package karmancmd is the karman command line, built on cobra: serve,
// namesrv, config, admin, bench, list-modules and version. It runs the
// modules registered with server.Default and imports none itself, so a
// custom binary chooses them:
//
//	package main
//
//	import (
//		karmancmd "github.com/karmanmq/karman/cmd/karman/karmancmd"
//		_ "github.com/karmanmq/karman/server/modules/broker"
//		_ "github.com/karmanmq/karman/server/modules/namesrv"
//	)
//
//	func main() { karmancmd.Main() }
//
// (the karman binary imports server/modules/standard, the whole standard
// set).
package karmancmd
