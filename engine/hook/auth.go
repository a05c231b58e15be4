package hook

import (
	"context"
	"crypto/x509"
	"errors"
	"net/netip"
	"strconv"
)

// Authenticator establishes who a client is from the credentials a
// request carries.
type Authenticator interface {
	// Authenticate verifies c and returns the principal it proves. An
	// error (Unauthenticated, or any error matching ErrUnauthenticated)
	// refuses the request. c belongs to the call: front-ends reuse it,
	// so an Authenticator must not keep it, or anything in it but
	// strings, after it returns.
	Authenticate(ctx context.Context, c *Credentials) (Principal, error)
}

// Authorizer decides whether a principal may act on a resource.
type Authorizer interface {
	// Authorize returns nil to allow p to do a on r, Deny(reason) (or
	// any error matching ErrDenied) to refuse it.
	Authorize(ctx context.Context, p Principal, a Action, r Resource) error
}

// Principal is who a client is, as an Authenticator established it. The
// zero Principal is an anonymous client (no Authenticator installed).
type Principal struct {
	// Name is the principal's name: the access key for RocketMQ's
	// signature schemes.
	Name string
	// Attributes are what the Authenticator wants Authorizers and other
	// hooks to know (a tenant, roles). Read-only once returned.
	Attributes map[string]string
}

// Anonymous reports whether p is the zero Principal's name.
func (p Principal) Anonymous() bool { return p.Name == "" }

// Credentials are what a request carries to prove who sent it. The
// front-end fills them from the protocol and verifies nothing; the
// Authenticator does.
type Credentials struct {
	// Protocol is the front-end: "remoting", "grpc" or "mqtt".
	Protocol string
	// Addr is the client's address; zero when unknown.
	Addr netip.AddrPort
	// AccessKey names the secret the request was signed with; "" when
	// the request carries no credentials.
	AccessKey string
	// Algorithm is the signature scheme: "HmacSHA1" for remoting (ACL
	// 1.0), the authorization header's scheme for gRPC
	// ("MQv2-HMAC-SHA1"); "" without credentials.
	Algorithm string
	// Signature is the signature as the client sent it: base64 for
	// remoting, hexadecimal for gRPC.
	Signature string
	// Content is what the signature signs: for remoting the values of
	// the request's extFields but Signature, in the order of their keys,
	// followed by the body (rmqauth.RemotingContent); for gRPC the value
	// of the x-mq-date-time header. Nil when there is no signature.
	// Read-only; it is valid only during the call.
	Content []byte
	// SecurityToken is the session token of temporary credentials, if
	// any (remoting extField SecurityToken, gRPC x-mq-session-token).
	SecurityToken string
	// Username and Password are an MQTT CONNECT's; Password is nil when
	// the packet has none. Read-only; valid only during the call.
	Username string
	Password []byte
	// ClientID is the MQTT client identifier ("" for other protocols).
	ClientID string
	// Certificate is the client's certificate when the connection's TLS
	// layer verified it against the client CAs it was given (MQTT over
	// TLS with --mqtt-tls-client-ca); nil otherwise. Read-only.
	Certificate *x509.Certificate
	// Fields are the raw fields the credentials were taken from, for
	// schemes of one's own: a remoting request's extFields, a gRPC
	// call's RocketMQ headers (authorization and the x-mq-* headers,
	// first value each). Read-only; valid only during the call.
	Fields map[string]string
}

// Action is what a client asks to do. The first two are messaging; the
// others are administration (Action.Admin), as in RocketMQ's ACL 2.0.
type Action uint8

// Actions.
const (
	ActionPub    Action = iota + 1 // send to a topic
	ActionSub                      // consume a topic, act as a consumer group
	ActionCreate                   // create a topic or group
	ActionUpdate                   // change a topic, group, offsets or a cluster's settings
	ActionDelete                   // delete a topic or group
	ActionGet                      // read a topic's, group's or cluster's state
	ActionList                     // list topics, groups or clients
)

var actionNames = [...]string{"", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List"}

func (a Action) String() string {
	if int(a) < len(actionNames) && a != 0 {
		return actionNames[a]
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Admin reports whether a is an administration action (Create, Update,
// Delete, Get, List): what RocketMQ's ACL 1.0 calls admin requests.
func (a Action) Admin() bool { return a >= ActionCreate && a <= ActionList }

// ResourceType is the kind of a Resource.
type ResourceType uint8

// Resource types.
const (
	ResourceTopic   ResourceType = iota + 1 // a topic (or light queue)
	ResourceGroup                           // a consumer or producer group
	ResourceCluster                         // the cluster or broker as a whole
	ResourceMQTT                            // an MQTT topic name or filter, as the device wrote it
)

var resourceNames = [...]string{"", "Topic", "Group", "Cluster", "mqtt"}

func (t ResourceType) String() string {
	if int(t) < len(resourceNames) && t != 0 {
		return resourceNames[t]
	}
	return "ResourceType(" + strconv.Itoa(int(t)) + ")"
}

// Resource is what an action is on. Names are the engine's: with a
// client's namespace, "ns%name".
type Resource struct {
	Type ResourceType
	Name string
}

// Topic returns the resource of topic name.
func Topic(name string) Resource { return Resource{ResourceTopic, name} }

// AllTopics is the resource of every topic at once ("*" is no topic's
// name), which an MQTT filter with a wildcard first level (#, +/...)
// reads from: an Authorizer allows an action on it only where it would
// allow it on any topic.
var AllTopics = Topic("*")

// Group returns the resource of group name.
func Group(name string) Resource { return Resource{ResourceGroup, name} }

// Cluster returns the resource of cluster (or broker) name.
func Cluster(name string) Resource { return Resource{ResourceCluster, name} }

// MQTT returns the resource of an MQTT topic name (publish) or topic filter
// (subscribe) as the client wrote it. The MQTT front-end authorizes an
// action on the RocketMQ topic it maps to (Topic) and then on this.
func MQTT(topic string) Resource { return Resource{ResourceMQTT, topic} }

func (r Resource) String() string { return r.Type.String() + ":" + r.Name }

// Errors of authentication and authorization.
var (
	// ErrUnauthenticated matches the error of a request whose
	// credentials an Authenticator refused (or that carried none where
	// they are required).
	ErrUnauthenticated = errors.New("hook: unauthenticated")
	// ErrDenied matches the error of an action an Authorizer refused.
	ErrDenied = errors.New("hook: denied")
)

// AuthError is an Authenticator's or Authorizer's refusal with its
// reason, which reaches the client. It matches ErrUnauthenticated or
// ErrDenied.
type AuthError struct {
	Kind   error // ErrUnauthenticated or ErrDenied
	Reason string
}

func (e *AuthError) Error() string {
	if e.Kind == ErrDenied {
		return "denied: " + e.Reason
	}
	return "unauthenticated: " + e.Reason
}

// Is makes the error match its Kind.
func (e *AuthError) Is(target error) bool { return target == e.Kind }

// Unauthenticated returns the error an Authenticator returns to refuse
// credentials, saying why.
func Unauthenticated(reason string) error {
	return &AuthError{Kind: ErrUnauthenticated, Reason: reason}
}

// Deny returns the error an Authorizer returns to refuse an action,
// saying why.
func Deny(reason string) error { return &AuthError{Kind: ErrDenied, Reason: reason} }
