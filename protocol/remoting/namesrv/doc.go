// Package namesrv is the RocketMQ name server over the remoting protocol,
// both ends of it: the request processors a name server runs, and the
// Registrar a broker runs to keep itself registered.
//
// # Name server
//
// A Processor translates name-server requests onto two interfaces this
// package declares, Routes (the route table) and KVConfig (the
// configuration store). It holds no routes itself; the binary hands it a
// table (Karman's lives in the cluster module) through a small adapter.
//
//	p := namesrv.New(routes, kv, namesrv.Options{Logger: log})
//	mux := server.NewMux()
//	p.Mount(mux)
//	srv := server.New(mux, server.Options{OnClose: p.ConnClosed})
//	go srv.Serve(ln)
//
// Requests served (all of kind server.KindNamesrv):
//
//	105 GET_ROUTEINFO_BY_TOPIC      topic → TopicRouteData JSON, brokerAddrs compact with the
//	                                master under "0"; TOPIC_NOT_EXIST when no broker serves it
//	103 REGISTER_BROKER             JSON or compressed RegisterBrokerBody, bodyCrc32 checked
//	                                when non-zero → haServerAddr, masterAddr (replicas) and the
//	                                ORDER_TOPIC_CONFIG namespace as a KVTable body
//	104 UNREGISTER_BROKER           → SUCCESS
//	106 GET_BROKER_CLUSTER_INFO     → {"brokerAddrTable":{...},"clusterAddrTable":{...}}
//	224 GET_TOPICS_BY_CLUSTER       cluster → {"topicList":[...]}
//	206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER → {"topicList":[...]}
//	304 GET_SYSTEM_TOPIC_LIST_FROM_NS → cluster and broker names as {"topicList":[...],"brokerAddr":...}
//	216 DELETE_TOPIC_IN_NAMESRV     topic [, clusterName] → SUCCESS
//	100 PUT_KV_CONFIG               namespace, key, value → SUCCESS
//	101 GET_KV_CONFIG               namespace, key → value extField, or QUERY_NOT_FOUND
//	102 DELETE_KV_CONFIG            namespace, key → SUCCESS
//	219 GET_KVLIST_BY_NAMESPACE     namespace → {"table":{...}}, or QUERY_NOT_FOUND
//
// A header that lacks a required field or has an unparsable one, and a
// body that does not decode, get INVALID_PARAMETER with the reason in the
// remark; a body whose CRC does not match bodyCrc32 and a registration the
// table refuses get SYSTEM_ERROR. The connection keeps serving either way.
//
// With Options.Hooks holding an Authenticator or an Authorizer (the
// engine's, engine.Engine.Hooks), the administration requests (216, 100,
// 102, 205 WIPE_WRITE_PERM_OF_BROKER, 327 ADD_WRITE_PERM_OF_BROKER) are
// authenticated from their ACL extFields and authorized as Delete or
// Update on hook.Cluster (the request's clusterName, else ""); a refusal
// is NO_PERMISSION with the reason. Queries and broker registration stay
// open, as on RocketMQ's name server.
//
// A broker that registered over a connection is unregistered when that
// connection closes (wire Processor.ConnClosed into server.Options.OnClose),
// as a Java name server does; brokers that go silent are dropped by the
// table's own expiry.
//
// Java brokers also send REGISTER_BROKER with only the topics they just
// created, so a registration adds and updates topics but removes none —
// unless it carries the extField karmanCompleteTopics=true
// (ExtCompleteTopics), which the Registrar sends: then the body is the
// broker's complete topic set and topics missing from it lose that
// broker's queues. Java name servers ignore the extra field.
//
// # Broker side: Registrar
//
// A Registrar keeps one broker registered with a list of name servers:
//
//	r, err := namesrv.NewRegistrar(namesrv.RegistrarOptions{
//		NameServers: []string{"127.0.0.1:9876"},
//		Cluster:     "DefaultCluster",
//		BrokerName:  "broker-a",
//		BrokerID:    0,                 // master
//		BrokerAddr:  "10.0.0.1:10911",  // what clients dial
//		Topics:      currentTopics,     // func() []namesrv.TopicConfig, the complete set
//	})
//	r.Start()                           // registers at once, then every 30 s
//	...
//	r.Trigger()                         // topics changed: register now
//	...
//	r.Close(ctx)                        // unregister and disconnect
//
// Each name server gets its own goroutine and connection (a peer.Peer).
// A registration calls Topics, encodes the body (JSON, or the deflate form
// with Compressed), sets bodyCrc32 and sends it within Timeout. After a
// failure the connection is dropped and re-dialed on the next attempt;
// attempts back off from MinBackoff (1 s), doubling up to MaxBackoff
// (Interval). Trigger bumps the data version and wakes every name server
// that is not backing off; triggers that pile up are coalesced. OnRegister
// reports every attempt, with the master's address for a replica.
// RegisterAll registers once with all name servers and waits, for start-up
// code that wants to know the broker is routable.
//
// # Concurrency
//
// Processor and Registrar are safe for concurrent use. The processor's
// handlers run concurrently; the Routes and KVConfig they call must be
// safe for concurrent use. Registrar calls Topics and OnRegister from its
// own goroutines, one per name server.
package namesrv
