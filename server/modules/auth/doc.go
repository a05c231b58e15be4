// Package auth is the server module auth.acl: authentication and
// authorization of every protocol by the engine's access-control list
// (package engine/acl), on RocketMQ's ACL 2.0 model.
//
// It is off by default. With --auth the ACL is installed in the engine's
// hooks, loaded from the engine's metadata when the engine opens, and
// every front-end that runs hooks (remoting broker, name server admin
// requests, gRPC, MQTT) starts after it, so that no request is served
// unguarded:
//
//	karman serve --auth --auth-init-user admin --auth-init-secret 's3cret-admin'
//
// --auth-init-user and --auth-init-secret (or KARMAN_AUTH_INIT_USER and
// KARMAN_AUTH_INIT_SECRET) create the first super user when no user of
// that name exists; an existing user is left as it is. A server with
// --auth and no enabled super user, stored or initial, refuses to start
// before any port is bound. The other way to the first super user is
// local: `karman admin user create NAME --secret S --type super --data
// DIR` writes it into the data directory while the server is stopped
// (only who may write the data directory can). There is no network path
// to it: a running server always has a super user.
//
// The name server authenticates and authorizes only its admin requests
// (delete topic, KV config, broker write permission): route queries and
// broker registration stay open, as RocketMQ's name server leaves them,
// since clients look routes up before they talk to any broker.
//
// MQTT clients give the user's name as username and its secret as
// password; with --mqtt-tls-client-ca, a client over TLS whose
// certificate verifies is the user its subject's common name names, with
// no password. Policies on mqtt:FILTER resources (with %u and %c for the
// user and the client id) confine MQTT clients to topic subtrees, on top
// of the Topic policies of the RocketMQ topic an MQTT topic maps to.
//
// --auth-clock-skew bounds how far a gRPC request's x-mq-date-time may be
// from the server's clock (default 15m).
//
// Refused requests are logged at WARN (user, protocol, action, resource,
// source address, reason; at most acl.AuditBurst lines a second) and
// counted on /metrics as karman_auth_refused_total{protocol,kind}, kind
// "unauthenticated" or "denied"; karman_auth_audit_unlogged_total counts
// the refusals the rate limit kept out of the log.
//
// It registers itself with server.Default when imported; the standard set
// imports it.
package auth
