package broker

import (
	"time"

	"github.com/karmanmq/karman/protocol/remoting/server"
)

// Flow control. Sends are appended to the commit log at once, but become
// pullable only when the engine's dispatcher has indexed them. When the
// dispatcher falls more than Options.BusyDispatchLag bytes behind, the
// broker answers sends with SYSTEM_BUSY (through the server's Busy hook)
// until it catches up, as a Java broker does when its page cache is busy.
// The lag is sampled every Options.BusyCheck, off the request path.

// Busy is meant for server.Options.Busy: it reports true for sends while
// the engine is overloaded.
func (b *Broker) Busy(k server.Kind) bool {
	return k == server.KindSend && b.busy.Load()
}

func (b *Broker) busyLoop() {
	if b.opts.BusyDispatchLag < 0 {
		return
	}
	b.every(b.opts.BusyCheck, b.sampleBusy)
}

// every calls fn every d until the broker closes.
func (b *Broker) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// sampleBusy updates the busy flag from the engine's dispatch lag.
func (b *Broker) sampleBusy() {
	if b.opts.BusyDispatchLag < 0 {
		return
	}
	lag := b.eng.DispatchLag()
	busy := lag > b.opts.BusyDispatchLag
	if b.busy.Swap(busy) != busy {
		if busy {
			b.opts.Logger.Warn("flow control on: the engine's dispatcher is behind", "lag_bytes", lag)
		} else {
			b.opts.Logger.Info("flow control off", "lag_bytes", lag)
		}
	}
}
