// Package kv holds small helpers shared by the engine's pebble-backed stores.
package kv

import (
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
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
// records, errors stay errors.
//
// Pebble calls Fatalf when it cannot go on: a commit after its log failed
// to write or sync, a MANIFEST that could not be written, a broken
// invariant. Fatalf must not return, and a panic would end the process
// from one of pebble's goroutines, which nobody recovers. Fatalf
// therefore logs the error, records it in Fatal (which tells whoever
// waits on it) and ends the calling goroutine with runtime.Goexit, its
// deferred calls run (pebble's unlocks among them). Callers that wait
// for a database call must thus also wait on Fatal.Done; the stores run
// such calls on goroutines of their own.
type Logger struct {
	L     *slog.Logger
	Fatal *Fatal // nil: not recorded
}

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

// Fatalf logs at error level, records the error in l.Fatal and ends the
// calling goroutine.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "pebble: ") {
		msg = "pebble: " + msg
	}
	if l.L != nil {
		l.L.Error(msg)
	}
	if l.Fatal != nil {
		l.Fatal.set(&FatalError{Msg: msg})
	}
	runtime.Goexit()
}

// FatalError is an error pebble reported through Fatalf.
type FatalError struct{ Msg string }

func (e *FatalError) Error() string { return e.Msg }

// Fatal records the first fatal error of one database.
type Fatal struct {
	on   func(error)
	once sync.Once
	done chan struct{}
	err  error
}

// NewFatal returns a Fatal that calls on (when not nil) with the first
// fatal error.
func NewFatal(on func(error)) *Fatal { return &Fatal{on: on, done: make(chan struct{})} }

func (f *Fatal) set(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.done)
		if f.on != nil {
			f.on(err)
		}
	})
}

// Done returns a channel closed at the first fatal error.
func (f *Fatal) Done() <-chan struct{} { return f.done }

// Err returns the first fatal error, or nil.
func (f *Fatal) Err() error {
	select {
	case <-f.done:
		return f.err
	default:
		return nil
	}
}

// Run runs fn, a call into the database, on a goroutine of its own and
// returns its error, or the fatal error if pebble fails fatally before
// fn returns (fn's goroutine has then ended, or waits for good).
func (f *Fatal) Run(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-f.done:
		select {
		case err := <-done:
			return err
		default:
			return f.err
		}
	}
}
