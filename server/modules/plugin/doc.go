// Package plugin is the server module plugin.process: it runs the
// out-of-process plugins given with --plugin (see package plugins) next
// to the broker.
//
//	karman serve --plugin hook=./webhook,url=http://127.0.0.1:8080/in \
//	             --plugin auth=./headerauth,allow=s3cret,sha256=…
//
// Each --plugin NAME=PATH[,key=value…] is started, its checksum (when
// pinned) and handshake checked, while the server provisions its modules,
// so a missing program, a checksum that does not match or a program that
// is not a plugin stops the start before any port is bound. The plugins'
// hooks (authentication, authorization, interceptors) are added to the
// engine's hooks; their connectors start with the open engine and stop
// before it closes. Their call, failure and restart counts are served on
// /metrics. With no --plugin the module does nothing.
//
// It registers itself with server.Default when imported; the standard set
// imports it.
package plugin
