package acl

import (
	"testing"

	"github.com/karmanmq/karman/engine/hook"
)

// FuzzParseResource: any string parses or is refused, never panics, and
// a parsed mqtt pattern can be matched against any topic.
func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"*", "Topic:a", "Topic:a-*", "Group:*", "Cluster:c", "mqtt:devices/%c/#", "mqtt:+/%u/x%%y", "mqtt:#", "Topic:a*b", "mqtt:a/#/b"} {
		f.Add(s, "devices/c1/x")
	}
	f.Fuzz(func(t *testing.T, s, topic string) {
		typ, name, levels, err := ParseResource(s)
		if err != nil {
			return
		}
		if typ == hook.ResourceMQTT {
			mqttCovers(levels, topic, "u", "c")
			return
		}
		name.match(topic)
	})
}

// FuzzEntry: any entry normalizes or is refused; a normalized entry
// normalizes to itself.
func FuzzEntry(f *testing.F) {
	f.Add("Topic:a", "Pub,Sub", "Allow", "10.0.0.0/8")
	f.Add("mqtt:a/%c/#", "All", "deny", "::1")
	f.Add("Group:g*", "Get", "Deny", "")
	f.Fuzz(func(t *testing.T, res, actions, decision, source string) {
		e := Entry{Resource: res, Actions: []string{actions}, Decision: Decision(decision), SourceIPs: []string{source}}
		n, err := e.Normalize()
		if err != nil {
			return
		}
		again, err := n.Normalize()
		if err != nil {
			t.Fatalf("normalized %+v does not normalize: %v", n, err)
		}
		if again.Resource != n.Resource || again.Decision != n.Decision || len(again.Actions) != len(n.Actions) {
			t.Fatalf("normalize changed %+v to %+v", n, again)
		}
	})
}
