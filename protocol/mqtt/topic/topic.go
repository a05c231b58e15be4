package topic

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors.
var (
	// ErrInvalidName reports a topic name that is empty, too long, not
	// UTF-8, contains U+0000 or a wildcard.
	ErrInvalidName = errors.New("topic: invalid topic name")
	// ErrInvalidFilter reports a malformed topic filter or shared
	// subscription.
	ErrInvalidFilter = errors.New("topic: invalid topic filter")
)

// MaxLength is the longest topic name or filter, in bytes.
const MaxLength = 65535

// SharePrefix starts a shared subscription filter.
const SharePrefix = "$share/"

func checkText(s string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > MaxLength:
		return "longer than 65,535 bytes"
	case strings.IndexByte(s, 0) >= 0:
		return "contains U+0000"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	return ""
}

// ValidName checks a topic name as PUBLISH carries it: at least one byte,
// UTF-8 without U+0000, no "+" or "#".
func ValidName(name string) error {
	if why := checkText(name); why != "" {
		return fmt.Errorf("%w: %s", ErrInvalidName, why)
	}
	if strings.ContainsAny(name, "+#") {
		return fmt.Errorf("%w: %q has a wildcard", ErrInvalidName, name)
	}
	return nil
}

// ValidFilter checks a topic filter as SUBSCRIBE and UNSUBSCRIBE carry it,
// including a shared subscription "$share/GROUP/FILTER".
func ValidFilter(filter string) error {
	if why := checkText(filter); why != "" {
		return fmt.Errorf("%w: %s", ErrInvalidFilter, why)
	}
	if strings.HasPrefix(filter, SharePrefix) {
		_, _, err := ParseShared(filter)
		return err
	}
	return validFilterLevels(filter)
}

func validFilterLevels(filter string) error {
	rest := filter
	for {
		level, tail, more := strings.Cut(rest, "/")
		if level != "+" && level != "#" && strings.ContainsAny(level, "+#") {
			return fmt.Errorf("%w: %q: a wildcard must fill its level", ErrInvalidFilter, filter)
		}
		if level == "#" && more {
			return fmt.Errorf("%w: %q: # must be the last level", ErrInvalidFilter, filter)
		}
		if !more {
			return nil
		}
		rest = tail
	}
}

// ParseShared splits a shared subscription "$share/GROUP/FILTER" into its
// group and filter, checking both. It fails for a filter without the
// "$share/" prefix.
func ParseShared(filter string) (group, inner string, err error) {
	rest, ok := strings.CutPrefix(filter, SharePrefix)
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not a shared subscription", ErrInvalidFilter, filter)
	}
	group, inner, ok = strings.Cut(rest, "/")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%w: %q: no filter after the share name", ErrInvalidFilter, filter)
	case group == "":
		return "", "", fmt.Errorf("%w: %q: empty share name", ErrInvalidFilter, filter)
	case strings.ContainsAny(group, "+#"):
		return "", "", fmt.Errorf("%w: %q: wildcard in the share name", ErrInvalidFilter, filter)
	case inner == "":
		return "", "", fmt.Errorf("%w: %q: empty filter", ErrInvalidFilter, filter)
	}
	if err := validFilterLevels(inner); err != nil {
		return "", "", err
	}
	return group, inner, nil
}

// IsShared reports whether filter has the "$share/" prefix.
func IsShared(filter string) bool { return strings.HasPrefix(filter, SharePrefix) }

// Match reports whether the valid topic filter (not a shared one: pass the
// filter ParseShared returns) matches the valid topic name.
func Match(filter, name string) bool {
	if name != "" && name[0] == '$' && filter != "" && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		nl, nrest, nmore := strings.Cut(name, "/")
		if fl != "+" && fl != nl {
			return false
		}
		switch {
		case !fmore && !nmore:
			return true
		case !nmore:
			return frest == "#"
		case !fmore:
			return false
		}
		filter, name = frest, nrest
	}
}
