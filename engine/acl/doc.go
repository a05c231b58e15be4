// Package acl is Karman's access-control list, on RocketMQ's ACL 2.0
// model: users and their policies, an Authenticator and an Authorizer
// (package hook) that guard every protocol at once.
//
// # Users
//
// A user has a name, which is its access key for RocketMQ clients and
// its username for MQTT clients; a secret; a type, Super (may do
// everything) or Normal (may do what its policies allow); and a status,
// enable or disable. The secret is stored as given: RocketMQ's signature
// schemes are HMACs, which the broker can only check holding the secret
// itself (as RocketMQ's brokers hold it). It is never logged. An MQTT
// client's password is its user's secret, compared in constant time.
//
// Users live in the engine's metadata (Store: engine.Engine and
// meta.Store implement it), one JSON record per user with its policies,
// so they survive restarts and will replicate with the rest of the
// metadata.
//
// # Policies
//
// A policy entry is a decision (Allow or Deny) on actions (Pub, Sub,
// Create, Update, Delete, Get, List, or All) over resources, from
// optional source addresses (IPs or CIDR ranges):
//
//	Topic:orders        the topic orders
//	Topic:orders-*      topics whose names start with orders-
//	Group:*             every group
//	Cluster:DefaultCluster
//	*                   every topic, group and cluster
//	mqtt:devices/%c/#   MQTT topics under devices/<client id>
//
// Names are the engine's, with a client's namespace ("ns%orders").
// An mqtt pattern is an MQTT topic filter whose + and # wildcards
// match as MQTT's do, with %u and %c standing for the user name and the
// client id (the hook.Client's ID), as Mosquitto's ACL patterns; a value
// holding '/', '+' or '#' matches nothing. A publish is checked on its
// topic name; a subscription on its filter, which the pattern must
// cover (a + in the filter needs + or # in the pattern).
//
// # Evaluation
//
// Authorize: an unknown or disabled user is denied; a super user is
// allowed; otherwise the user's entries that match the resource, the
// action and the client's address decide: any Deny refuses, else any
// Allow allows, else the action is refused. An mqtt resource is judged
// only by the user's mqtt entries, and a user with none is allowed: the
// MQTT front-end also authorizes the RocketMQ topic an MQTT topic maps
// to, so a user's Topic entries govern its devices unless it has mqtt
// entries. An MQTT filter whose first level is a wildcard (#, +/...)
// reads every topic: it is authorized on hook.AllTopics, which needs an
// Allow of every topic (Topic:* or *) and no Deny of any.
//
// Authenticate: remoting and gRPC requests must be signed (package
// rmqauth) with the secret of an enabled user; a gRPC request's
// x-mq-date-time must be within Options.ClockSkew of the broker's clock,
// which bounds how long a captured request can be replayed (remoting
// requests carry nothing to bound it with). A request without
// credentials is refused. MQTT: username and password; or a client
// certificate the TLS connection verified (hook.Credentials.Certificate),
// whose subject's common name is the user, with no password (a username,
// if given, must be that name).
//
// Each check reads an immutable, precompiled snapshot through an atomic
// pointer: no lock and no allocation unless it refuses. Refusals are
// counted per protocol (Refusals) and logged at WARN with the user, the
// protocol, the action, the resource, the client's address and the
// reason, at most AuditBurst lines a second.
//
// An ACL is safe for concurrent use. Changes are serialized, written to
// the store (synced) and then published.
package acl
