package convert

import (
	"strings"

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
	prefix, rest := splitRetryPrefix(name)
	if strings.HasPrefix(rest, ns+namespaceSeparator) {
		return name
	}
	return prefix + ns + namespaceSeparator + rest
}

// WithoutNamespace returns the name a client of namespace ns knows the
// stored name by: name without the namespace, or name itself when it is
// not in ns. It allocates only for a retry or dead-letter topic in ns.
func WithoutNamespace[S ~string | ~[]byte](ns string, name S) S {
	if ns == "" {
		return name
	}
	prefix := 0
	for _, p := range retryPrefixes {
		if len(name) >= len(p) && string(name[:len(p)]) == p {
			prefix = len(p)
			break
		}
	}
	rest := name[prefix:]
	n := len(ns) + len(namespaceSeparator)
	if len(rest) <= n || string(rest[:len(ns)]) != ns || string(rest[len(ns):n]) != namespaceSeparator {
		return name
	}
	if prefix == 0 {
		return rest[n:]
	}
	return S(append([]byte(name[:prefix]), rest[n:]...))
}

// retryPrefixes are the prefixes of retry and dead-letter topics, which go
// in front of the namespace.
var retryPrefixes = [...]string{message.RetryTopicPrefix, message.DLQTopicPrefix}

// splitRetryPrefix splits the retry or dead-letter prefix off name, which
// goes in front of the namespace.
func splitRetryPrefix(name string) (prefix, rest string) {
	for _, p := range retryPrefixes {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return p, rest
		}
	}
	return "", name
}
