// Package kv holds small helpers shared by the engine's pebble-backed stores.
package kv

import (
	"fmt"
	"log/slog"
	"slices"
)

// PrefixEnd returns the smallest key greater than every key that starts
// with p, or nil when there is none (p is all 0xff).
func PrefixEnd(p []byte) []byte {
	end := slices.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// Logger adapts slog to pebble's logger: informational lines become debug
// records, errors stay errors, and a fatal error panics (pebble requires
// Fatalf not to return).
type Logger struct{ L *slog.Logger }

// Infof logs at debug level.
func (l Logger) Infof(format string, args ...any) {
	if l.L != nil {
		l.L.Debug(fmt.Sprintf(format, args...))
	}
}

// Errorf logs at error level.
func (l Logger) Errorf(format string, args ...any) {
	if l.L != nil {
		l.L.Error(fmt.Sprintf(format, args...))
	}
}

// Fatalf panics with the message.
func (l Logger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
