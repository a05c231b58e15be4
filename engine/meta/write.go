package meta

import (
	"fmt"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// ErrFailed: the store took an error from its log it cannot go on after
// (pebble's commit pipeline stops at a failed log write or sync). Writes
// are refused until a restart; reads are served. It is a disk.ErrFailed.
var ErrFailed = fmt.Errorf("%w: the metadata store cannot write its log; fix the disk and restart", disk.ErrFailed)

// Failure returns why the store refuses writes for good, or nil.
func (s *Store) Failure() error {
	if err := s.fatal.Err(); err != nil {
		return fmt.Errorf("%w (%v)", ErrFailed, err)
	}
	return nil
}

// failed tells the disk monitor of pebble's fatal error.
func (s *Store) failed(err error) {
	if s.disk != nil {
		s.disk.ReportFailure(fmt.Errorf("%w (%v)", ErrFailed, err))
	}
}

// refuse returns why a write cannot be taken now, or nil.
func (s *Store) refuse(what string) error {
	if err := s.Failure(); err != nil {
		return fmt.Errorf("meta: %s refused: %w", what, err)
	}
	if s.disk != nil {
		// Metadata is written while messages are refused (disk.Full):
		// consumers go on committing offsets and acknowledging until the
		// disk is out of space.
		if err := s.disk.Refuse(disk.Full); err != nil {
			return fmt.Errorf("meta: %s refused: %w", what, err)
		}
	}
	return nil
}

// write runs fn, a write to the database, unless the disk or the store
// refuses it, and returns its error.
//
// fn runs on a goroutine of its own, and write returns when fn does or
// when, first, pebble fails fatally (fn's goroutine may have ended in
// kv.Logger.Fatalf) or the disk runs out of space: a write that found
// the disk full waits in kv.DiskFS for space to return, and its caller is
// not to wait with it. Such a write is applied when space returns (or
// never, if the store closes first); its caller got an error saying so.
func (s *Store) write(what string, fn func() error) error {
	if err := s.refuse(what); err != nil {
		return err
	}
	var noSpace <-chan struct{}
	if s.disk != nil {
		noSpace = s.disk.NoSpace()
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-s.fatal.Done():
	case <-noSpace:
	}
	select {
	case err := <-done: // it finished meanwhile
		return err
	default:
	}
	if err := s.Failure(); err != nil {
		return fmt.Errorf("meta: %s: %w", what, err)
	}
	err := s.disk.Refuse(disk.Full)
	if err == nil {
		err = disk.ErrFull
	}
	return fmt.Errorf("meta: %s not confirmed, it is written when space returns: %w", what, err)
}
