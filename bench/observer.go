package bench

import "context"

// Observer is told when the measured part of a phase begins and ends, after
// any pre-load and connection set-up: a profiler or a tracer hooks in here.
type Observer interface {
	Begin()
	End()
}

type observerKey struct{}

// WithObserver returns a context that makes the generators of this package
// report the measured part of their phases to o, after any Observer ctx
// already has.
func WithObserver(ctx context.Context, o Observer) context.Context {
	if prev, ok := ctx.Value(observerKey{}).(Observer); ok {
		o = observers{prev, o}
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// observers calls both, the first first on Begin and last on End.
type observers [2]Observer

func (o observers) Begin() { o[0].Begin(); o[1].Begin() }
func (o observers) End()   { o[1].End(); o[0].End() }

// Begin tells the Observer of ctx, if any, that measuring begins.
// Generators call it just before they start the clock.
func Begin(ctx context.Context) {
	if o, ok := ctx.Value(observerKey{}).(Observer); ok {
		o.Begin()
	}
}

// End tells the Observer of ctx, if any, that measuring has ended.
func End(ctx context.Context) {
	if o, ok := ctx.Value(observerKey{}).(Observer); ok {
		o.End()
	}
}

// Unobserved returns a context whose phases report to no Observer, for
// work that is not measured (a pre-load).
func Unobserved(ctx context.Context) context.Context {
	return context.WithValue(ctx, observerKey{}, nil)
}
