// Package kv holds small helpers shared by the engine's pebble-backed stores.
package kv

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
// records, errors stay errors. Pebble calls Fatalf when it cannot go on
// (a commit after its log failed to write, a broken invariant) and
// requires it not to return: Fatalf logs the error and panics with a
// *FatalError, which the stores' methods recover with Recover and turn
// into an error, so that a request fails instead of the process.
type Logger struct{ L *slog.Logger }

// FatalError is the panic value of Logger.Fatalf.
type FatalError struct{ Msg string }

func (e *FatalError) Error() string { return e.Msg }

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

// Fatalf logs at error level and panics with a *FatalError.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "pebble: ") {
		msg = "pebble: " + msg
	}
	if l.L != nil {
		l.L.Error(msg)
	}
	panic(&FatalError{Msg: msg})
}

// Recover, deferred, turns a panic of Logger.Fatalf into *errp; any other
// panic goes on.
func Recover(errp *error) {
	r := recover()
	if r == nil {
		return
	}
	fe, ok := r.(*FatalError)
	if !ok {
		panic(r)
	}
	*errp = fe
}
