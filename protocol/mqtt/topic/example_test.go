package topic_test

import (
	"fmt"
	"sort"

	"github.com/karmanmq/karman/protocol/mqtt/topic"
)

func Example() {
	var subs topic.Tree[string, byte] // session → granted QoS
	subs.Add("room/+/temp", "dashboard", 1)
	subs.Add("room/#", "logger", 0)
	subs.Add("#", "everything", 0)
	if _, filter, err := topic.ParseShared("$share/workers/jobs/#"); err == nil {
		subs.Add(filter, "worker-group", 1) // the group goes in the key in a real server
	}

	for _, name := range []string{"room/1/temp", "room", "$SYS/uptime"} {
		var who []string
		for _, s := range subs.Match(name, nil) {
			who = append(who, s.Key)
		}
		sort.Strings(who)
		fmt.Println(name, who)
	}
	fmt.Println(topic.ValidFilter("a/#/b"), topic.Match("a/+", "a/"))
	// Output:
	// room/1/temp [dashboard everything logger]
	// room [everything logger]
	// $SYS/uptime []
	// topic: invalid topic filter: "a/#/b": # must be the last level true
}
