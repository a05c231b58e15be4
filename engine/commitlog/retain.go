package commitlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/karmanmq/karman/engine/internal/disk"
)

// Retain deletes whole segments from the front of the log, oldest first and
// never the one being appended to, while either holds:
//
//   - the segment was last written more than maxAge before now
//     (maxAge <= 0 disables this rule);
//   - the file system holding the log is more than maxDiskRatio full
//     (0 < maxDiskRatio < 1; 0 disables this rule). Each deletion is
//     counted as freeing one segment, whether or not a reader still holds
//     it open.
//
// Deletion does not wait for consumers: records in deleted segments are
// gone (reads get ErrOffsetGone) and MinOffset moves forward. Reads in
// progress on a deleted segment complete; its space is freed when the last
// one finishes. Retain returns how many segments it deleted.
func (l *Log) Retain(now time.Time, maxAge time.Duration, maxDiskRatio float64) (removed int, err error) {
	p, err := l.retainPolicy(maxAge, maxDiskRatio)
	if err != nil {
		return 0, err
	}
	l.segMu.Lock()
	cur := *l.segs.Load()
	n := p.count(cur, now, l.segSize)
	if n == 0 {
		l.segMu.Unlock()
		return 0, nil
	}
	rest := make([]*segment, len(cur)-n)
	copy(rest, cur[n:])
	l.segs.Store(&rest)
	l.segMu.Unlock()

	var errs []error
	for _, s := range cur[:n] {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		l.diskBytes.Add(-l.segSize)
		s.release()
	}
	if err := syncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	l.logger.Info("commitlog: retention deleted segments",
		"segments", n, "min", rest[0].base, "maxAge", maxAge, "maxDiskRatio", maxDiskRatio)
	if len(errs) > 0 {
		return n, fmt.Errorf("commitlog: retain: %w", errors.Join(errs...))
	}
	return n, nil
}

// Retainable returns how many segments Retain would delete with the same
// arguments, deleting nothing, and the first offset that would then be
// retained (MinOffset when none would be deleted). An owner that wants to
// know what a deletion loses looks before calling Retain.
func (l *Log) Retainable(now time.Time, maxAge time.Duration, maxDiskRatio float64) (n int, newMin int64, err error) {
	p, err := l.retainPolicy(maxAge, maxDiskRatio)
	if err != nil {
		return 0, 0, err
	}
	cur := *l.segs.Load()
	n = p.count(cur, now, l.segSize)
	if n == 0 || n >= len(cur) {
		return 0, l.MinOffset(), nil
	}
	return n, cur[n].base, nil
}

// retainPolicy is what one Retain call applies: the age limit and, when
// the disk rule is on, the file system's usage.
type retainPolicy struct {
	maxAge       time.Duration
	maxDiskRatio float64
	byDisk       bool
	used, total  uint64
}

// retainPolicy checks Retain's arguments and reads the file system's
// usage when the disk rule is on.
func (l *Log) retainPolicy(maxAge time.Duration, maxDiskRatio float64) (retainPolicy, error) {
	if l.closed.Load() {
		return retainPolicy{}, ErrClosed
	}
	if math.IsNaN(maxDiskRatio) || maxDiskRatio < 0 || maxDiskRatio > 1 {
		return retainPolicy{}, fmt.Errorf("commitlog: retain: disk ratio %v is not between 0 and 1", maxDiskRatio)
	}
	p := retainPolicy{maxAge: maxAge, maxDiskRatio: maxDiskRatio}
	p.byDisk = maxDiskRatio > 0 && maxDiskRatio < 1
	if p.byDisk {
		var err error
		if p.used, p.total, err = l.statfs(); err != nil {
			return retainPolicy{}, fmt.Errorf("commitlog: retain: %w", err)
		}
		p.byDisk = p.total > 0
	}
	return p, nil
}

// count returns how many segments from the front of segs the policy
// deletes at now: never the last, the one being appended to.
func (p retainPolicy) count(segs []*segment, now time.Time, segSize int64) int {
	n := 0
	var freed uint64
	for ; n < len(segs)-1; n++ {
		s := segs[n]
		old := p.maxAge > 0 && now.Sub(time.Unix(0, s.lastWrite.Load())) > p.maxAge
		full := p.byDisk && p.used > freed && float64(p.used-freed)/float64(p.total) > p.maxDiskRatio
		if !old && !full {
			break
		}
		freed += uint64(segSize)
	}
	return n
}

// DiskUsage returns the bytes of segment files the log holds, including a
// segment made ahead of need.
func (l *Log) DiskUsage() int64 { return l.diskBytes.Load() }

// FileSystemUsage returns the used and total bytes of the file system
// holding the log, as df counts them.
func (l *Log) FileSystemUsage() (used, total uint64, err error) { return l.statfs() }

func (l *Log) statfs() (used, total uint64, err error) {
	if h := l.opts.hooks; h != nil && h.statfs != nil {
		return h.statfs(l.dir)
	}
	return disk.Usage(l.dir)
}
