// Package pluginpb is the Go code generated from ../../proto/plugin.proto:
// the messages and the Plugin service a plugin process serves to the
// broker. Only packages of this module use it; plugin authors program
// against package shared.
//
// Regenerate after editing the .proto with protoc (3.21 or newer) on
// PATH; the Go generators are built at pinned versions:
//
//	go generate ./internal/pluginpb
package pluginpb

//go:generate ./gen.sh
