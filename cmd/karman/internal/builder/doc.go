// Package builder makes custom karman binaries: it generates a main
// package that runs the karman command line (package karmancmd) with a
// chosen set of server modules, resolves their Go modules with the go
// command and builds it. It is what "karman build" runs.
//
// A build, step by step, in a temporary directory:
//
//	go mod init karman-build
//	go mod edit -go=<the source's go version> -replace=<module>=<dir> ...
//	                      (every module of the Karman source tree's go.work,
//	                      the tree's own non-local replacements, and each
//	                      --with module given a local directory)
//	go get <module>@<version>  (each --with module given a version)
//	main.go               (karmancmd.Main and a blank import per module)
//	go mod tidy
//	go build -o <output> .
//
// The go.sum files of the source tree seed the new one, so modules the
// tree already resolved need no checksum look-up. Without a source tree,
// Build.KarmanVersion names a published version of Karman's command module
// instead ("go get github.com/karmanmq/karman/cmd/karman@<version>"), and
// the go command resolves Karman's other modules from it.
//
// The standard modules (Standard) come in through server/modules/standard,
// or, when some are left out, one package at a time. Every go command runs
// in the caller's environment (GOFLAGS, GOPROXY, GOTOOLCHAIN, ... pass
// through) with GOWORK=off, so no enclosing workspace changes what is built.
//
// Bad input (an unknown standard module id, a module path that is not
// valid, a local directory that does not exist or has no go.mod, a missing
// output) is refused before any go command runs; a go command that fails
// is a *CommandError carrying its output, wrapped with what it was doing
// (the --with module whose version the go command refused).
//
// A Build is used by one goroutine at a time.
package builder
