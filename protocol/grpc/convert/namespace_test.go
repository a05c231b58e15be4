package convert

import (
	"testing"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func TestNamespaced(t *testing.T) {
	tests := []struct {
		ns, name, stored string
	}{
		{"", "T", "T"},
		{"ns", "", ""},
		{"ns", "T", "ns%T"},
		{"ns", "ns%T", "ns%T"}, // already joined
		{"ns", "other%T", "ns%other%T"},
		{"ns", "%RETRY%G", "%RETRY%ns%G"},
		{"ns", "%RETRY%ns%G", "%RETRY%ns%G"},
		{"ns", "%DLQ%G", "%DLQ%ns%G"},
		{"ns", "TBW102", "TBW102"}, // system topics are shared
		{"ns", "rmq_sys_wheel_timer", "rmq_sys_wheel_timer"},
		{"ns", "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC"},
	}
	for _, tt := range tests {
		if got := Namespaced(tt.ns, tt.name); got != tt.stored {
			t.Errorf("Namespaced(%q, %q) = %q, want %q", tt.ns, tt.name, got, tt.stored)
		}
		if got := ResourceName(&rmqpb.Resource{ResourceNamespace: tt.ns, Name: tt.name}); got != tt.stored {
			t.Errorf("ResourceName(%q, %q) = %q, want %q", tt.ns, tt.name, got, tt.stored)
		}
		// What is stored under a namespace comes back as the client named it,
		// unless the client named it with the namespace already.
		if tt.ns != "" && tt.name != "" && tt.stored != tt.name {
			if back := WithoutNamespace(tt.ns, tt.stored); back != tt.name {
				t.Errorf("WithoutNamespace(%q, %q) = %q, want %q", tt.ns, tt.stored, back, tt.name)
			}
		}
	}
}

func TestWithoutNamespaceLeavesOthersAlone(t *testing.T) {
	tests := []struct{ ns, stored, want string }{
		{"", "ns%T", "ns%T"},
		{"ns", "T", "T"},
		{"ns", "other%T", "other%T"},
		{"ns", "ns%", "ns%"}, // nothing after the namespace: not a joined name
		{"ns", "%RETRY%other%G", "%RETRY%other%G"},
		{"ns", "TBW102", "TBW102"},
	}
	for _, tt := range tests {
		if got := WithoutNamespace(tt.ns, tt.stored); got != tt.want {
			t.Errorf("WithoutNamespace(%q, %q) = %q, want %q", tt.ns, tt.stored, got, tt.want)
		}
	}
}

func TestWithoutNamespaceBytes(t *testing.T) {
	for _, tt := range []struct{ ns, stored, want string }{
		{"ns", "ns%T", "T"},
		{"ns", "%RETRY%ns%G", "%RETRY%G"},
		{"ns", "T", "T"},
		{"", "ns%T", "ns%T"},
	} {
		if got := string(WithoutNamespace(tt.ns, []byte(tt.stored))); got != tt.want {
			t.Errorf("WithoutNamespace(%q, []byte(%q)) = %q, want %q", tt.ns, tt.stored, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { WithoutNamespace("ns", []byte("ns%Topic")) }); n > 1 {
		t.Errorf("WithoutNamespace allocates %v times for a plain topic", n)
	}
}
