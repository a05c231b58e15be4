package server

import (
	"context"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Namespaces: a resource's namespace is its resource_namespace, else the
// namespace the call declares in its x-mq-namespace header (see
// convert.ResourceName for how names are joined). RocketMQ 5 clients
// send the header on every call but do not set resource_namespace on
// every resource (the Node.js client leaves it out of route queries and
// consumer groups), so the header fills the gaps before a request is
// handled, and every name a client of a namespace uses lands in it.

// callNamespace returns the namespace the call declares, "" for none.
func callNamespace(ctx context.Context) string { return incomingHeader(ctx, headerNamespace) }

// clientResource returns a copy of r as a client named it (name and
// namespace apart), for answers that name the resource back.
func clientResource(r *rmqpb.Resource) *rmqpb.Resource {
	return &rmqpb.Resource{ResourceNamespace: r.GetResourceNamespace(), Name: r.GetName()}
}

// fillNamespace sets ns as the namespace of every named resource in the
// request v that has none.
func fillNamespace(v any, ns string) {
	if m, ok := v.(proto.Message); ok && ns != "" {
		fillResources(m.ProtoReflect(), ns)
	}
}

func fillResources(m protoreflect.Message, ns string) {
	if r, ok := m.Interface().(*rmqpb.Resource); ok {
		if r.GetResourceNamespace() == "" && r.GetName() != "" {
			r.ResourceNamespace = ns
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := v.List()
			for i := range l.Len() {
				fillResources(l.Get(i).Message(), ns)
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				fillResources(mv.Message(), ns)
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			fillResources(v.Message(), ns)
		}
		return true
	})
}
