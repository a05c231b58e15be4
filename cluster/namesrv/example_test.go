package namesrv_test

import (
	"fmt"
	"time"

	"github.com/karmanmq/karman/cluster/namesrv"
)

// A master and a replica of broker-a register; clients ask for the route.
func Example() {
	t := namesrv.New(namesrv.Options{})
	rw := namesrv.PermRead | namesrv.PermWrite
	t.Register(namesrv.BrokerRegistration{
		Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: namesrv.MasterID,
		Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912",
		Topics: []namesrv.TopicConfig{{Name: "TopicA", ReadQueues: 4, WriteQueues: 4, Perm: rw}},
	})
	res, _ := t.Register(namesrv.BrokerRegistration{
		Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1, Addr: "10.0.0.2:10911",
	})
	fmt.Println("replica's master:", res.MasterAddr, res.MasterHAAddr)

	r, _ := t.Route("TopicA")
	fmt.Printf("queues: %+v\n", r.Queues)
	fmt.Println("brokers:", r.Brokers[0].BrokerName, r.Brokers[0].Addrs)

	// Two minutes of silence later, both are gone and so is the topic.
	gone := t.Expire(time.Now().Add(2*time.Minute + time.Second))
	_, ok := t.Route("TopicA")
	fmt.Println("expired:", len(gone), "routable:", ok)
	// Output:
	// replica's master: 10.0.0.1:10911 10.0.0.1:10912
	// queues: [{BrokerName:broker-a ReadQueues:4 WriteQueues:4 Perm:6 SysFlag:0 Order:false}]
	// brokers: broker-a map[0:10.0.0.1:10911 1:10.0.0.2:10911]
	// expired: 2 routable: false
}
