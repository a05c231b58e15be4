package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Java brokers and name servers encode their bodies with fastjson, which
// writes map keys that are not strings as they are: Map<Long, String> as
// {0:"ip:port"} and Map<MessageQueue, Long> as
// {{"brokerName":"b","queueId":0,"topic":"T"}:42}. Neither is JSON.
// normalizeKeys turns such keys into strings holding their JSON text
// ({"0":"ip:port"}, {"{\"brokerName\":...}":42}), which encoding/json
// reads into maps keyed by string (or by integer, for "0").

// maxDepth bounds the nesting normalizeKeys follows.
const maxDepth = 64

var errSyntax = errors.New("invalid JSON")

// normalizeKeys returns in, compacted, with every object key that is not a
// string replaced by a string holding the key's JSON text.
func normalizeKeys(in []byte) ([]byte, error) {
	s := &keyScanner{in: in, out: make([]byte, 0, len(in)+16)}
	if err := s.value(0); err != nil {
		return nil, err
	}
	s.ws()
	if s.pos != len(s.in) {
		return nil, s.fail("data after the top-level value")
	}
	return s.out, nil
}

type keyScanner struct {
	in  []byte
	pos int
	out []byte
}

func (s *keyScanner) fail(what string) error {
	return fmt.Errorf("%w at offset %d: %s", errSyntax, s.pos, what)
}

func (s *keyScanner) ws() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *keyScanner) value(depth int) error {
	if depth > maxDepth {
		return s.fail("nested too deeply")
	}
	s.ws()
	if s.pos >= len(s.in) {
		return s.fail("unexpected end")
	}
	switch c := s.in[s.pos]; c {
	case '{':
		return s.object(depth)
	case '[':
		return s.array(depth)
	case '"':
		return s.str()
	case ',', ':', ']', '}':
		return s.fail(fmt.Sprintf("unexpected %q", c))
	default:
		start := s.pos
		for s.pos < len(s.in) && strings.IndexByte(",:]} \t\r\n{[\"", s.in[s.pos]) < 0 {
			s.pos++
		}
		lit := s.in[start:s.pos]
		if !json.Valid(lit) {
			return s.fail(fmt.Sprintf("bad literal %q", lit))
		}
		s.out = append(s.out, lit...)
		return nil
	}
}

func (s *keyScanner) str() error {
	start := s.pos
	s.pos++ // opening quote
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case '\\':
			s.pos += 2
			continue
		case '"':
			s.pos++
			s.out = append(s.out, s.in[start:s.pos]...)
			return nil
		}
		s.pos++
	}
	return s.fail("unterminated string")
}

func (s *keyScanner) object(depth int) error {
	s.pos++
	s.out = append(s.out, '{')
	s.ws()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		s.out = append(s.out, '}')
		return nil
	}
	for {
		s.ws()
		if s.pos >= len(s.in) {
			return s.fail("unexpected end in object")
		}
		if s.in[s.pos] == '"' {
			if err := s.str(); err != nil {
				return err
			}
		} else {
			// A non-string key: scan it as a value, then quote its text.
			mark := len(s.out)
			if err := s.value(depth + 1); err != nil {
				return err
			}
			key := string(s.out[mark:])
			s.out = s.out[:mark]
			quoted, _ := json.Marshal(key)
			s.out = append(s.out, quoted...)
		}
		s.ws()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return s.fail("want ':' after an object key")
		}
		s.pos++
		s.out = append(s.out, ':')
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.in) {
			return s.fail("unexpected end in object")
		}
		switch s.in[s.pos] {
		case ',':
			s.pos++
			s.out = append(s.out, ',')
		case '}':
			s.pos++
			s.out = append(s.out, '}')
			return nil
		default:
			return s.fail("want ',' or '}' in object")
		}
	}
}

func (s *keyScanner) array(depth int) error {
	s.pos++
	s.out = append(s.out, '[')
	s.ws()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		s.out = append(s.out, ']')
		return nil
	}
	for {
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.in) {
			return s.fail("unexpected end in array")
		}
		switch s.in[s.pos] {
		case ',':
			s.pos++
			s.out = append(s.out, ',')
		case ']':
			s.pos++
			s.out = append(s.out, ']')
			return nil
		default:
			return s.fail("want ',' or ']' in array")
		}
	}
}

// queueTable is a map keyed by message queue as brokers write it: an
// object whose keys hold the queue's JSON (after normalizeKeys), or an
// array of [queue, value] pairs (gson's form).
type queueTable[V any] map[wire.MessageQueue]V

// UnmarshalJSON reads either form.
func (t *queueTable[V]) UnmarshalJSON(data []byte) error {
	out := queueTable[V]{}
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
	case len(data) > 0 && data[0] == '[':
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(data, &pairs); err != nil {
			return err
		}
		for _, p := range pairs {
			if len(p) != 2 {
				return fmt.Errorf("queue table entry with %d elements, want [queue, value]", len(p))
			}
			q, err := parseQueueKey(p[0])
			if err != nil {
				return err
			}
			var v V
			if err := json.Unmarshal(p[1], &v); err != nil {
				return err
			}
			out[q] = v
		}
	default:
		var m map[string]V
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		for k, v := range m {
			q, err := parseQueueKey(json.RawMessage(k))
			if err != nil {
				return err
			}
			out[q] = v
		}
	}
	*t = out
	return nil
}

// parseQueueKey reads a queue from its JSON object, or from a JSON string
// holding that object.
func parseQueueKey(raw json.RawMessage) (wire.MessageQueue, error) {
	var q wire.MessageQueue
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return q, err
		}
		raw = json.RawMessage(s)
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return q, fmt.Errorf("queue key %s: %w", raw, err)
	}
	return q, nil
}

// sortedQueues returns the table's queues ordered by topic, broker and
// queue id.
func sortedQueues[V any](t map[wire.MessageQueue]V) []wire.MessageQueue {
	qs := make([]wire.MessageQueue, 0, len(t))
	for q := range t {
		qs = append(qs, q)
	}
	slices.SortFunc(qs, compareQueues)
	return qs
}

func compareQueues(a, b wire.MessageQueue) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return int(a.QueueID) - int(b.QueueID)
}
