// Package console serves Karman's JSON API under /api/v1/ on the server's
// HTTP address: topics (list, create, update, delete, browse a queue),
// consumer groups (members, lag per queue, reset offsets by time, dead
// letters and their resend), messages (by id, by key, by time range) and
// an overview of the node, with what its modules report of themselves.
// openapi.yaml, served at /api/v1/openapi.yaml, documents every
// operation.
//
// Modules add operations of their own through Options.Routes (the MQTT
// front-end's /mqtt/sessions and /mqtt/retained), served like the API's:
// authorized, with the same error shapes. A Route with no Action is only
// authenticated and answers what its caller may see, asking Authorize.
//
// A message's history (GET /messages/{id}/history) puts together what the
// engine stored (the message, its retry and dead-letter copies), its
// delivery history (engine.Deliveries: each pull or pop with the consumer,
// and each commit, ack, invisibility change, retry and dead letter) and
// the trace records clients sent, decoded by package tracedata.
// LagHistory, which the server runs, samples every group's lag so that
// GET /groups/{group} gives the last minutes of it.
//
// GET /cluster is the node's cluster as the name servers its broker
// registers with know it (GET_BROKER_CLUSTER_INFO over the remoting
// protocol): each broker group with its brokers' ids, addresses and
// roles, and from each broker's runtime information its master epoch,
// in-sync set and replication lag; a broker that does not answer within
// 500 ms is marked so. The view is kept for 3 seconds. Without a name
// server, or when none answers, the node's broker is shown alone. The
// remoting requests are not signed: with --auth on, a broker that wants a
// signature is shown up with the refusal as its error.
//
// The API is part of the HTTP server rather than a module of its own: it
// answers on the address of /healthz and /metrics and works on whatever
// engine the server opened, whichever front-ends run.
//
// # Errors
//
// Every error, whatever the operation, is answered with a 4xx or 5xx
// status and the body {"error":{"code":"...","message":"..."}}: bad input
// is a 400 INVALID_ARGUMENT (or OFFSET_OUT_OF_RANGE) saying which
// parameter and why; missing things 404 TOPIC_NOT_FOUND, GROUP_NOT_FOUND,
// MESSAGE_NOT_FOUND or NOT_FOUND; 405 METHOD_NOT_ALLOWED, 409
// TOPIC_EXISTS, 415 UNSUPPORTED_MEDIA_TYPE; 401 UNAUTHENTICATED and 403
// FORBIDDEN or NO_PERMISSION; 503 UNAVAILABLE while the engine is not open
// or its disk refuses writes. errorOf is the one table from engine errors
// to statuses.
//
// # Authentication
//
// When the engine has Authenticators or Authorizers (engine.Hooks), every
// API call is authenticated from its HTTP Basic credentials
// (hook.Credentials with Protocol "http", Username and Password, the
// Authorization header in Fields) and authorized as an administration
// action: List or Get on the cluster, Create, Update, Delete or Get on the
// topic or group named in the path. Lists (topics, groups, a topic's
// groups) leave out what the principal may not Get, and a message found by
// id is refused unless its topic may be read.
//
// # Concurrency
//
// An API serves requests concurrently; each runs with the engine held
// open (Options.Engine) until it answers.
package console
