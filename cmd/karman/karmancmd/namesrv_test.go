package karmancmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/karmanmq/karman/server"
)

func TestNamesrvNotCompiledIn(t *testing.T) {
	root := New(&server.Registry{})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"namesrv", "--addr", "127.0.0.1:0"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "without the name server") {
		t.Errorf("namesrv without the front-end: %v", err)
	}
}
