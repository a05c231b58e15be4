package acl

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/karmanmq/karman/engine/hook"
)

// matchKind is how a name pattern matches.
type matchKind uint8

const (
	matchLiteral matchKind = iota // the name itself
	matchPrefix                   // names starting with the text
	matchAny                      // every name
)

// namePattern matches resource names of one type.
type namePattern struct {
	kind matchKind
	text string
}

func (p namePattern) match(name string) bool {
	switch p.kind {
	case matchLiteral:
		return name == p.text
	case matchPrefix:
		return strings.HasPrefix(name, p.text)
	}
	return true
}

// rule is a compiled policy entry.
type rule struct {
	typ     hook.ResourceType // 0: every type but mqtt ("*")
	name    namePattern
	mqtt    []mqttLevel // typ == hook.ResourceMQTT
	actions actionBits
	deny    bool
	sources []netip.Prefix // empty: from anywhere
}

// compileEntry compiles a policy entry.
func compileEntry(e Entry) (rule, error) {
	var r rule
	var err error
	if r.typ, r.name, r.mqtt, err = ParseResource(e.Resource); err != nil {
		return rule{}, err
	}
	if r.actions, err = parseActions(e.Actions); err != nil {
		return rule{}, fmt.Errorf("resource %s: %w", e.Resource, err)
	}
	d, err := ParseDecision(string(e.Decision))
	if err != nil {
		return rule{}, fmt.Errorf("resource %s: %w", e.Resource, err)
	}
	r.deny = d == Deny
	if r.sources, err = parseSources(e.SourceIPs); err != nil {
		return rule{}, fmt.Errorf("resource %s: %w", e.Resource, err)
	}
	return r, nil
}

// ParseResource parses a resource pattern (see Entry.Resource) into its
// type (0 for "*", every type but mqtt), its name pattern and, for an
// mqtt pattern, its levels.
func ParseResource(s string) (hook.ResourceType, namePattern, []mqttLevel, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return 0, namePattern{kind: matchAny}, nil, nil
	}
	typ, name, ok := strings.Cut(s, ":")
	if !ok {
		return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: want Type:NAME (Topic, Group, Cluster, mqtt) or *", ErrInvalid, s)
	}
	var t hook.ResourceType
	switch {
	case strings.EqualFold(typ, "Topic"):
		t = hook.ResourceTopic
	case strings.EqualFold(typ, "Group"):
		t = hook.ResourceGroup
	case strings.EqualFold(typ, "Cluster"):
		t = hook.ResourceCluster
	case strings.EqualFold(typ, "mqtt"):
		levels, err := parseMQTTPattern(name)
		if err != nil {
			return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: %v", ErrInvalid, s, err)
		}
		return hook.ResourceMQTT, namePattern{}, levels, nil
	default:
		return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: unknown type %q (want Topic, Group, Cluster or mqtt)", ErrInvalid, s, typ)
	}
	if name == "" {
		return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: no name", ErrInvalid, s)
	}
	if len(name) > 255 {
		return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: name longer than 255", ErrInvalid, s)
	}
	if name == "*" {
		return t, namePattern{kind: matchAny}, nil, nil
	}
	if strings.ContainsAny(name, " \t\r\n") {
		return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: white space in the name", ErrInvalid, s)
	}
	if i := strings.IndexByte(name, '*'); i >= 0 {
		if i != len(name)-1 {
			return 0, namePattern{}, nil, fmt.Errorf("%w: resource %q: '*' only ends a prefix", ErrInvalid, s)
		}
		return t, namePattern{kind: matchPrefix, text: name[:i]}, nil, nil
	}
	return t, namePattern{kind: matchLiteral, text: name}, nil, nil
}

// mqttLevel is one level of an MQTT filter pattern.
type mqttLevel struct {
	kind  mqttKind
	parts []mqttPart // mqttText: literal text and placeholders
}

type mqttKind uint8

const (
	mqttText mqttKind = iota // literal, perhaps with %u and %c
	mqttPlus                 // +: any one level
	mqttHash                 // #: this level and any below, or none
)

// mqttPart is literal text, or a placeholder (text "" and v 'u' or 'c').
type mqttPart struct {
	text string
	v    byte
}

// parseMQTTPattern parses an MQTT topic filter with %u and %c
// placeholders. '+' and '#' stand alone in their level, '#' last; '%'
// is followed by u, c or another '%'.
func parseMQTTPattern(f string) ([]mqttLevel, error) {
	if f == "" {
		return nil, fmt.Errorf("empty filter")
	}
	if len(f) > 65535 {
		return nil, fmt.Errorf("filter longer than 65535 bytes")
	}
	var out []mqttLevel
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "+":
			out = append(out, mqttLevel{kind: mqttPlus})
			continue
		case l == "#":
			if i != len(levels)-1 {
				return nil, fmt.Errorf("'#' must be the last level")
			}
			out = append(out, mqttLevel{kind: mqttHash})
			continue
		case strings.ContainsAny(l, "+#"):
			return nil, fmt.Errorf("level %q: '+' and '#' stand alone in a level", l)
		case strings.ContainsRune(l, 0):
			return nil, fmt.Errorf("level %q: NUL character", l)
		}
		var parts []mqttPart
		text := ""
		for j := 0; j < len(l); j++ {
			if l[j] != '%' {
				text += l[j : j+1]
				continue
			}
			if j+1 >= len(l) {
				return nil, fmt.Errorf("level %q: '%%' at its end (want %%u, %%c or %%%%)", l)
			}
			j++
			switch l[j] {
			case '%':
				text += "%"
			case 'u', 'c':
				if text != "" {
					parts = append(parts, mqttPart{text: text})
					text = ""
				}
				parts = append(parts, mqttPart{v: l[j]})
			default:
				return nil, fmt.Errorf("level %q: unknown placeholder %%%c (want %%u or %%c)", l, l[j])
			}
		}
		if text != "" || len(parts) == 0 {
			parts = append(parts, mqttPart{text: text})
		}
		out = append(out, mqttLevel{kind: mqttText, parts: parts})
	}
	return out, nil
}

// mqttCovers reports whether the pattern levels, with user and client
// for %u and %c, cover topic: an MQTT topic name (publish) or topic
// filter (subscribe). A filter is covered when every topic it matches
// matches the pattern: a '+' in it needs '+' or '#' in the pattern, a
// '#' needs '#'. As in MQTT, a leading wildcard does not match a topic
// starting with '$'. A placeholder whose value is empty or holds '/',
// '+' or '#' matches nothing.
func mqttCovers(pattern []mqttLevel, topic, user, client string) bool {
	if len(topic) > 0 && topic[0] == '$' && len(pattern) > 0 && pattern[0].kind != mqttText {
		return false
	}
	rest := topic
	done := false // every level of topic consumed
	for _, p := range pattern {
		if p.kind == mqttHash {
			return true
		}
		if done {
			return false
		}
		level := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			level, rest = rest[:i], rest[i+1:]
		} else {
			done = true
		}
		switch p.kind {
		case mqttPlus:
			if level == "#" {
				return false
			}
		case mqttText:
			if level == "+" || level == "#" || !matchText(p.parts, level, user, client) {
				return false
			}
		}
	}
	return done
}

// matchText matches one level against literal parts and placeholders.
func matchText(parts []mqttPart, level, user, client string) bool {
	for _, pt := range parts {
		s := pt.text
		switch pt.v {
		case 'u':
			s = user
		case 'c':
			s = client
		}
		if pt.v != 0 && (s == "" || strings.ContainsAny(s, "/+#")) {
			return false
		}
		if !strings.HasPrefix(level, s) {
			return false
		}
		level = level[len(s):]
	}
	return level == ""
}
