package commitlog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"
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
	if l.closed.Load() {
		return 0, ErrClosed
	}
	if math.IsNaN(maxDiskRatio) || maxDiskRatio < 0 || maxDiskRatio > 1 {
		return 0, fmt.Errorf("commitlog: retain: disk ratio %v is not between 0 and 1", maxDiskRatio)
	}
	var used, total uint64
	byDisk := maxDiskRatio > 0 && maxDiskRatio < 1
	if byDisk {
		if used, total, err = l.statfs(); err != nil {
			return 0, fmt.Errorf("commitlog: retain: %w", err)
		}
		byDisk = total > 0
	}

	l.segMu.Lock()
	cur := *l.segs.Load()
	n := 0
	var freed uint64
	for ; n < len(cur)-1; n++ { // the last segment is the active one
		s := cur[n]
		old := maxAge > 0 && now.Sub(time.Unix(0, s.lastWrite.Load())) > maxAge
		full := byDisk && used > freed && float64(used-freed)/float64(total) > maxDiskRatio
		if !old && !full {
			break
		}
		freed += uint64(l.segSize)
	}
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
	return diskUsage(l.dir)
}
