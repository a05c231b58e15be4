package registry_test

import (
	"fmt"

	"github.com/karmanmq/karman/engine/registry"
)

type conn string

func (c conn) RemoteAddr() string { return string(c) }

func Example() {
	r := registry.New(registry.Options{})

	// Two push consumers of group "cg" heartbeat through the remoting
	// front-end.
	for _, id := range []registry.ClientID{"10.0.0.2@7", "10.0.0.1@9"} {
		changed := r.Heartbeat(registry.Heartbeat{
			Client:   id,
			Protocol: "remoting",
			Conn:     conn("10.0.0.1:50000"),
			Consumers: []registry.Consumer{{
				Group: "cg",
				Subscriptions: []registry.Subscription{
					{Topic: "orders", Expression: "paid || shipped", Version: 1},
				},
			}},
		})
		fmt.Println("rebalance:", changed)
	}
	ids := r.ConsumerIDs("cg")
	fmt.Println("consumers:", ids)
	sub, _ := r.Subscription("cg", "orders")
	fmt.Println("subscription:", sub.ExprType, sub.Expression)

	// Each consumer computes its share of the topic's queues as the broker
	// would.
	var queues []registry.Queue
	for id := range int32(5) {
		queues = append(queues, registry.Queue{Topic: "orders", Broker: "broker-a", ID: id})
	}
	for _, id := range ids {
		fmt.Println(id, "gets", registry.AllocateAveragely(queues, ids, id))
	}

	// Orderly consumption: the first consumer locks its queues.
	locked := r.Lock("cg", ids[0], queues[:3])
	fmt.Println("locked:", len(locked))
	holder, _ := r.LockedBy("cg", queues[0])
	fmt.Println("queue 0 held by", holder)
	// Output:
	// rebalance: [cg]
	// rebalance: [cg]
	// consumers: [10.0.0.1@9 10.0.0.2@7]
	// subscription: TAG paid || shipped
	// 10.0.0.1@9 gets [orders@broker-a@0 orders@broker-a@1 orders@broker-a@2]
	// 10.0.0.2@7 gets [orders@broker-a@3 orders@broker-a@4]
	// locked: 3
	// queue 0 held by 10.0.0.1@9
}
