// Package karmancmd is the karman command line, built on cobra: serve,
// namesrv, controller, config, admin, bench, build, list-modules, completion and
// version. A mistyped subcommand or flag at any level is answered with the
// names it resembles (suggest.go); long admin and bench commands draw a
// progress line on standard error when it is a terminal (progress.go). It runs the
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
// set). "karman build" writes such a main package and builds it: the
// standard set less the ids given to --without, plus the Go packages given
// to --with (MODULE[@VERSION][=DIR]), with Karman's own modules taken from
// a source tree's go.work; package internal/builder does the work.
package karmancmd
