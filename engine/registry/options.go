package registry

import "time"

const (
	// DefaultExpiry is the default Options.Expiry: RocketMQ's 120 s
	// channel expiry.
	DefaultExpiry = 120 * time.Second
	// DefaultLockExpiry is the default Options.LockExpiry: RocketMQ's
	// rebalance lockMaxLiveTime, 60 s.
	DefaultLockExpiry = 60 * time.Second
	// DefaultWatchBacklog is the default Options.WatchBacklog.
	DefaultWatchBacklog = 1024
)

// Options configures a Registry. The zero value is ready to use: every
// field states its default, which EnsureDefaults fills in.
type Options struct {
	// Expiry is how long a client may stay silent (no heartbeat) before
	// Expire drops it. Clients heartbeat every 10 s (gRPC) or 30 s
	// (remoting).
	//
	// Default: DefaultExpiry (120s). Zero or negative means the default.
	Expiry time.Duration

	// LockExpiry is how long a queue lock lives without renewal. Clients
	// renew their locks every 20 s and stop consuming a queue they have not
	// renewed for 30 s, so this must stay above 30 s.
	//
	// Default: DefaultLockExpiry (60s). Zero or negative means the default.
	LockExpiry time.Duration

	// WatchBacklog is how many undelivered changes a watcher may hold
	// before further changes are coalesced into one Resync per group.
	//
	// Default: DefaultWatchBacklog (1024). Zero or negative means the
	// default.
	WatchBacklog int

	// Now is the clock used for heartbeats, expiry and locks.
	//
	// Default: time.Now.
	Now func() time.Time
}

// EnsureDefaults fills in the default of every unset field and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.Expiry <= 0 {
		o.Expiry = DefaultExpiry
	}
	if o.LockExpiry <= 0 {
		o.LockExpiry = DefaultLockExpiry
	}
	if o.WatchBacklog <= 0 {
		o.WatchBacklog = DefaultWatchBacklog
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
