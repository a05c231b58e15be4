// Package rmqauth verifies the signatures RocketMQ clients put on their
// requests, for Authenticators (package hook) to use: front-ends only
// extract the credentials (hook.Credentials), this package checks them.
//
// # Remoting (ACL 1.0)
//
// A remoting client with credentials adds AccessKey (and SecurityToken,
// if it has one) to every request's extFields, then signs:
//
//	content   = the values of every extField but Signature, in the order
//	            of their keys, concatenated, then the body
//	Signature = base64(HMAC-SHA1(secretKey, content))
//
// and sends Signature as one more extField. RemotingContent builds the
// content as the broker must; Sign and Verify do the rest. Keys are
// ordered by their bytes, as Java's TreeMap orders the ASCII keys
// RocketMQ uses. (rocketmq-client-go leaves SecurityToken out of what it
// signs while Java's client puts it in: a Go client with a security
// token is refused by Java brokers, and here too.)
//
// # gRPC (RocketMQ 5)
//
// A gRPC client with credentials sends on every call
//
//	x-mq-date-time: 20210309T195445Z
//	authorization:  MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<HEX-UPPER(HMAC-SHA1(secret, date-time))>
//
// ParseAuthorization decodes the header; the content signed is the
// date-time string.
//
// # Keys
//
// Keys is a ready Authenticator over a fixed map of access keys to
// secrets, for tests and simple deployments; an ACL with users keeps its
// own lookup and calls Verify.
//
// Everything here is safe for concurrent use and does not allocate more
// than the signature it computes.
package rmqauth
