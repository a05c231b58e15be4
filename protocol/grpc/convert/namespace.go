package convert

import (
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// Namespaces keep one tenant's topics and groups apart from another's, as
// RocketMQ's proxy does: a resource named N in namespace S is stored as
// "S%N", and the retry and dead-letter topics of a group G in S are
// "%RETRY%S%G" and "%DLQ%S%G". RocketMQ 5 clients configured with a
// namespace send it in every Resource (resource_namespace) and get their
// own names back; remoting clients with a namespace send the joined names
// themselves, so both reach the same topics.

// namespaceSeparator joins a namespace and a name.
const namespaceSeparator = "%"

// ResourceName returns the stored name of the resource r names: its name
// joined with its namespace.
func ResourceName(r *rmqpb.Resource) string {
	return Namespaced(r.GetResourceNamespace(), r.GetName())
}

// Namespaced joins name with namespace ns. An empty namespace or name, a
// system topic and a name that already carries the namespace are left
// as they are.
func Namespaced(ns, name string) string {
	if ns == "" || name == "" || message.IsSystemTopic(name) {
		return name
	}
	p := retryPrefixLen(name)
	if _, ok := cutNamespace(ns, name[p:]); ok {
		return name
	}
	return name[:p] + ns + namespaceSeparator + name[p:]
}

// WithoutNamespace returns the name a client of namespace ns knows the
// stored name by: name without the namespace, or name itself when it is
// not in ns. It allocates only for a retry or dead-letter topic in ns.
func WithoutNamespace[S ~string | ~[]byte](ns string, name S) S {
	if ns == "" {
		return name
	}
	p := retryPrefixLen(name)
	rest, ok := cutNamespace(ns, name[p:])
	switch {
	case !ok || len(rest) == 0: // "ns%" alone is not a name in ns
		return name
	case p == 0:
		return rest
	}
	return S(append([]byte(name[:p]), rest...))
}

// retryPrefixes are the prefixes of retry and dead-letter topics, which go
// in front of the namespace.
var retryPrefixes = [...]string{message.RetryTopicPrefix, message.DLQTopicPrefix}

// retryPrefixLen returns the length of name's retry or dead-letter
// prefix, 0 when it has none.
func retryPrefixLen[S ~string | ~[]byte](name S) int {
	for _, p := range retryPrefixes {
		if len(name) >= len(p) && string(name[:len(p)]) == p {
			return len(p)
		}
	}
	return 0
}

// cutNamespace returns name without the leading "ns%" and whether it had
// one.
func cutNamespace[S ~string | ~[]byte](ns string, name S) (S, bool) {
	n := len(ns) + len(namespaceSeparator)
	if len(name) < n || string(name[:len(ns)]) != ns || string(name[len(ns):n]) != namespaceSeparator {
		return name, false
	}
	return name[n:], true
}
