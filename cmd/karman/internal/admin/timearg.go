package admin

import (
	"strconv"
	"strings"
	"time"
)

// ParseTime reads a point in time as the admin commands take it:
//
//	now                        now
//	-1h, -90m, -1h30m, -2d     that long before now (Go durations, plus d for days)
//	+10m                       that long after now
//	1700000000000              milliseconds since the Unix epoch
//	2024-05-01T12:00:00Z       RFC 3339, with a zone or offset
//	2024-05-01T12:00:00        RFC 3339 without a zone: local time
//	2024-05-01                 midnight, local time
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return time.Time{}, invalidf("empty time")
	case strings.EqualFold(s, "now"):
		return now, nil
	case s[0] == '-' || s[0] == '+':
		d, err := parseDuration(s[1:])
		if err != nil {
			return time.Time{}, invalidf("time %q: %v (relative times look like -1h, -30m or -2d)", s, err)
		}
		if s[0] == '-' {
			d = -d
		}
		return now.Add(d), nil
	case isDigits(s):
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, invalidf("time %q: %v", s, err)
		}
		return time.UnixMilli(ms), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	return time.Time{}, invalidf("time %q: want now, a relative time (-1h), milliseconds since the epoch or RFC 3339 (2006-01-02T15:04:05Z)", s)
}

// parseDuration reads a Go duration, or a whole number of days ("2d").
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok && isDigits(days) {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > int64(1<<63-1)/int64(24*time.Hour) {
			return 0, strconv.ErrRange
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, strconv.ErrSyntax
	}
	return d, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
