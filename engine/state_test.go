package engine

import (
	"errors"
	"fmt"
	"testing"
)

func TestState(t *testing.T) {
	dir := t.TempDir()
	e := openTest(t, dir, nil)
	a, b := e.State("mqtt"), e.State("other")
	if err := a.Apply(StateOp{Key: "s/1", Value: []byte("one")}, StateOp{Key: "s/2", Value: []byte("two")}, StateOp{Key: "r/x", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Put("s/1", []byte("not mqtt")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put("s/3", nil); err != nil { // an empty value is a value
		t.Fatal(err)
	}
	if err := a.Delete("s/2"); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete("never"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if err := a.ApplySync(StateOp{Key: "s/4", Value: []byte("four")}); err != nil {
		t.Fatal(err)
	}
	e.Close()

	e = openTest(t, dir, nil) // the state is durable
	defer e.Close()
	a, b = e.State("mqtt"), e.State("other")
	scan := func(s *State, prefix string) string {
		t.Helper()
		out := ""
		if err := s.Scan(prefix, func(k string, v []byte) error {
			out += fmt.Sprintf("%s=%s;", k, v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		s            *State
		prefix, want string
	}{
		{a, "", "r/x=x;s/1=one;s/3=;s/4=four;"},
		{a, "s/", "s/1=one;s/3=;s/4=four;"},
		{a, "q", ""},
		{b, "", "s/1=not mqtt;"},
	} {
		if got := scan(tc.s, tc.prefix); got != tc.want {
			t.Errorf("Scan(%s, %q) = %q, want %q", tc.s.ns, tc.prefix, got, tc.want)
		}
	}
	if v, ok, err := a.Get("s/1"); err != nil || !ok || string(v) != "one" {
		t.Errorf("Get(s/1) = %q, %v, %v", v, ok, err)
	}
	if _, ok, err := a.Get("s/2"); err != nil || ok {
		t.Errorf("Get(s/2) after delete: ok %v, err %v", ok, err)
	}
	if err := a.DeletePrefix("s/"); err != nil {
		t.Fatal(err)
	}
	if got := scan(a, ""); got != "r/x=x;" {
		t.Errorf("after DeletePrefix: %q", got)
	}
	if got := scan(b, ""); got != "s/1=not mqtt;" {
		t.Errorf("DeletePrefix reached another namespace: %q", got)
	}
	stop := errors.New("stop")
	if err := b.Scan("", func(string, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Scan's callback error: %v", err)
	}
	if err := e.State("").Put("k", nil); err == nil {
		t.Error("an empty namespace was accepted")
	}
}
