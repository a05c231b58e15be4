package engine

import (
	"fmt"
	"time"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// DiskState says which writes the engine takes, from best to worst.
type DiskState int

const (
	// DiskOK: every write is taken.
	DiskOK DiskState = iota
	// DiskFull: the disk is at least Options.DiskFullRatio full. Sends
	// are refused with ErrDiskFull; consumers go on reading, committing
	// offsets and acknowledging.
	DiskFull
	// DiskNoSpace: less than Options.DiskReserve is free, or a write
	// failed for want of space. Every write is refused with ErrDiskFull;
	// reads are served.
	DiskNoSpace
	// DiskFailed: a write or a sync failed with an I/O error. Writes are
	// refused with ErrDiskFailed until a restart; reads are served.
	DiskFailed
)

// String returns "ok", "full", "no-space" or "failed".
func (s DiskState) String() string { return disk.State(s).String() }

// Health is what the engine says of its disk.
type Health struct {
	Disk   DiskState
	Reason string    // why writes are refused; empty when Disk is DiskOK
	Since  time.Time // when Disk was entered
	// Used and Total are the bytes of the file system holding the data,
	// as df counts them, at the last check.
	Used, Total uint64
}

// Writable reports whether sends are taken.
func (h Health) Writable() bool { return h.Disk == DiskOK }

// Health returns the state of the disk. The engine leaves DiskFull and
// DiskNoSpace by itself when space is freed; it checks the free space
// every Options.DiskCheckInterval, and at once after a write found the
// disk full.
func (e *Engine) Health() Health {
	st := e.disk.Status()
	return Health{Disk: DiskState(st.State), Reason: st.Reason, Since: st.Since, Used: st.Used, Total: st.Total}
}

// refuseSend returns why a message from a producer cannot be stored now,
// or nil: sends are refused from DiskFull on, as RocketMQ refuses them
// above diskSpaceWarningLevelRatio, so that the room left goes to
// consumers' offsets and acknowledgements.
func (e *Engine) refuseSend() error {
	if err := e.disk.Refuse(disk.OK); err != nil {
		return fmt.Errorf("engine: service not available now, message refused: %w", err)
	}
	return nil
}

// refuseWrite returns why the engine cannot write now, or nil: from
// DiskNoSpace on nothing is written.
func (e *Engine) refuseWrite() error {
	if err := e.disk.Refuse(disk.Full); err != nil {
		return fmt.Errorf("engine: service not available now, write refused: %w", err)
	}
	return nil
}

// diskError reports err, an error of a write, to the disk monitor when it
// says the disk is full or failing, and returns it matching ErrDiskFull
// or ErrDiskFailed then. Any other error is returned as it is.
func (e *Engine) diskError(err error) error {
	switch {
	case err == nil:
		return nil
	case disk.IsSpace(err):
		e.disk.ReportNoSpace(err)
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case disk.IsIO(err):
		e.disk.ReportFailure(err)
		return fmt.Errorf("%w: %w", ErrDiskFailed, err)
	}
	return err
}
