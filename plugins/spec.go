package plugins

import (
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Spec names a plugin and how to run it: NAME=PATH[,key=value…].
type Spec struct {
	// Name names the plugin in logs, metrics and stored positions:
	// letters, digits, '-', '_' and '.'.
	Name string
	// Path is the plugin's program.
	Path string
	// Config is the spec's key=value pairs without the host's keys; the
	// plugin gets it at Configure.
	Config map[string]string
	// SHA256, when set, pins the program's checksum (key sha256, hex).
	SHA256 []byte
	// Timeout, when set, is the deadline of each call (key timeout),
	// overriding Options.CallTimeout.
	Timeout time.Duration
	// Policy, when set, is the interceptor failure policy (key
	// on-failure), overriding Options.Policy.
	Policy Policy
	// From is where a sink with no stored position starts (key from:
	// "first", the default, or "end").
	From string
}

// ParseSpec parses NAME=PATH[,key=value…]. Keys must be unique and not
// empty; values may be empty but not contain a comma.
func ParseSpec(s string) (Spec, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok {
		return Spec{}, fmt.Errorf("%w: %q: want NAME=PATH[,key=value...]", ErrSpec, s)
	}
	if err := checkName(name); err != nil {
		return Spec{}, fmt.Errorf("%w: %q: %w", ErrSpec, s, err)
	}
	parts := strings.Split(rest, ",")
	sp := Spec{Name: name, Path: parts[0], Config: map[string]string{}}
	if sp.Path == "" {
		return Spec{}, fmt.Errorf("%w: %q: empty path", ErrSpec, s)
	}
	seen := map[string]bool{}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Spec{}, fmt.Errorf("%w: %q: %q is not key=value", ErrSpec, s, kv)
		}
		if seen[k] {
			return Spec{}, fmt.Errorf("%w: %q: key %q given twice", ErrSpec, s, k)
		}
		seen[k] = true
		switch k {
		case "sha256":
			sum, err := hex.DecodeString(v)
			if err != nil || len(sum) != 32 {
				return Spec{}, fmt.Errorf("%w: %q: sha256 must be 64 hex digits", ErrSpec, s)
			}
			sp.SHA256 = sum
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Spec{}, fmt.Errorf("%w: %q: timeout %q is not a positive duration", ErrSpec, s, v)
			}
			sp.Timeout = d
		case "on-failure":
			p, err := ParsePolicy(v)
			if err != nil {
				return Spec{}, fmt.Errorf("%w: %q: %w", ErrSpec, s, err)
			}
			sp.Policy = p
		case "from":
			if v != "first" && v != "end" {
				return Spec{}, fmt.Errorf("%w: %q: from must be first or end", ErrSpec, s)
			}
			sp.From = v
		default:
			sp.Config[k] = v
		}
	}
	return sp, nil
}

// String returns the spec in the form ParseSpec reads, keys sorted.
func (s Spec) String() string {
	var b strings.Builder
	b.WriteString(s.Name + "=" + s.Path)
	if s.SHA256 != nil {
		b.WriteString(",sha256=" + hex.EncodeToString(s.SHA256))
	}
	if s.Timeout > 0 {
		b.WriteString(",timeout=" + s.Timeout.String())
	}
	if s.Policy != PolicyDefault {
		b.WriteString(",on-failure=" + s.Policy.String())
	}
	if s.From != "" {
		b.WriteString(",from=" + s.From)
	}
	for _, k := range sortedKeys(s.Config) {
		b.WriteString("," + k + "=" + s.Config[k])
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range maps.Keys(m) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("empty name")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("name %q: only letters, digits, '-', '_' and '.'", name)
		}
	}
	if name == "." || name == ".." {
		return fmt.Errorf("name %q", name)
	}
	return nil
}

// Policy is what a failed interceptor call does to its batch.
type Policy int

const (
	// PolicyDefault is Options.Policy's zero value: PolicyReject.
	PolicyDefault Policy = iota
	// PolicyReject fails the batch (fail closed).
	PolicyReject
	// PolicySkip lets the batch pass as if the plugin were absent.
	PolicySkip
)

// ParsePolicy parses "reject" or "skip".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "reject":
		return PolicyReject, nil
	case "skip":
		return PolicySkip, nil
	}
	return PolicyDefault, fmt.Errorf("failure policy %q: want reject or skip", s)
}

func (p Policy) String() string {
	switch p {
	case PolicyReject, PolicyDefault:
		return "reject"
	case PolicySkip:
		return "skip"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}
