package shared

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/plugins/internal/pluginpb"
)

type marker struct{}

func (marker) BeforeStore(_ context.Context, b *StoreBatch) error {
	for i := range b.Messages {
		if b.Messages[i].Properties["no"] != "" {
			return Reject("said no")
		}
		if i%2 == 0 {
			b.Messages[i].Properties["even"] = "1"
		}
	}
	return nil
}

func (marker) BeforeDeliver(_ context.Context, b *DeliverBatch) error {
	if b.Group == "bad" {
		b.Drop(len(b.Messages))
	}
	b.Drop(0)
	return nil
}

func (marker) Authorize(_ context.Context, p hook.Principal, _ hook.Action, _ hook.Resource) error {
	if p.Name != "ok" {
		return hook.Deny("not ok")
	}
	return nil
}

func wire(props ...map[string]string) []*pluginpb.Message {
	var ms []*pluginpb.Message
	for _, p := range props {
		ms = append(ms, &pluginpb.Message{Topic: "T", Properties: message.AppendProperties(nil, p)})
	}
	return ms
}

func changed(c *pluginpb.PropertyChange) map[string]string {
	p, _ := message.DecodeProperties(c.GetProperties())
	return p
}

func TestServer(t *testing.T) {
	s := &server{impl: marker{}}
	ctx := context.Background()

	cr, err := s.Configure(ctx, &pluginpb.ConfigureRequest{Name: "m"})
	want := []pluginpb.Kind{pluginpb.Kind_KIND_BEFORE_STORE, pluginpb.Kind_KIND_BEFORE_DELIVER, pluginpb.Kind_KIND_AUTHORIZER}
	if err != nil || !slices.Equal(cr.GetKinds(), want) {
		t.Fatalf("Configure = %v, %v; want kinds %v", cr.GetKinds(), err, want)
	}
	if _, err := (&server{impl: struct{}{}}).Configure(ctx, &pluginpb.ConfigureRequest{}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Configure of a value of no kind: %v", err)
	}

	// Only the messages whose properties changed go back; nil maps work.
	sr, err := s.BeforeStore(ctx, &pluginpb.StoreRequest{Messages: wire(nil, map[string]string{"a": "b"}, map[string]string{"even": "1"})})
	if err != nil || len(sr.GetChanges()) != 1 || sr.GetChanges()[0].GetIndex() != 0 || changed(sr.GetChanges()[0])["even"] != "1" {
		t.Fatalf("BeforeStore = %v, %v; want message 0 changed", sr, err)
	}
	sr, err = s.BeforeStore(ctx, &pluginpb.StoreRequest{Messages: wire(map[string]string{"no": "1"})})
	if err != nil || sr.GetReject() != "said no" || len(sr.GetChanges()) != 0 {
		t.Fatalf("BeforeStore of a rejected batch = %v, %v", sr, err)
	}

	dr, err := s.BeforeDeliver(ctx, &pluginpb.DeliverRequest{Messages: wire(nil, nil)})
	if err != nil || !slices.Equal(dr.GetDrop(), []uint32{0}) {
		t.Fatalf("BeforeDeliver = %v, %v; want message 0 dropped", dr, err)
	}
	if _, err := s.BeforeDeliver(ctx, &pluginpb.DeliverRequest{Group: "bad", Messages: wire(nil)}); status.Code(err) != codes.OutOfRange {
		t.Fatalf("BeforeDeliver dropping past the batch: %v; want OutOfRange", err)
	}

	ar, err := s.Authorize(ctx, &pluginpb.AuthorizeRequest{Principal: &pluginpb.Principal{Name: "eve"}})
	if err != nil || ar.GetDeny() != "not ok" {
		t.Fatalf("Authorize = %v, %v; want a denial", ar, err)
	}
	if _, err := s.Write(ctx, &pluginpb.WriteRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("Write to a non-sink: %v; want Unimplemented", err)
	}
	if _, err := s.Authenticate(ctx, &pluginpb.AuthenticateRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("Authenticate of a non-authenticator: %v; want Unimplemented", err)
	}
	if !errors.Is(Reject("x"), ErrRejected) {
		t.Fatal("Reject does not match ErrRejected")
	}
}

func TestSameProperties(t *testing.T) {
	for _, tc := range []struct {
		p    map[string]string
		enc  string
		want bool
	}{
		{map[string]string{}, "", true},
		{nil, "", true},
		{map[string]string{"a": "1", "b": "2"}, "a\x011\x02b\x012\x02", true},
		{map[string]string{"a": "1", "b": "2"}, "b\x012\x02a\x011", true}, // order, no final separator
		{map[string]string{"a": "1"}, "a\x011\x02b\x012\x02", false},      // removed
		{map[string]string{"a": "1", "b": "2", "c": "3"}, "a\x011\x02b\x012\x02", false},
		{map[string]string{"a": "9", "b": "2"}, "a\x011\x02b\x012\x02", false},
		{map[string]string{"a": "2"}, "a\x011\x02a\x012\x02", false}, // a name twice: sent back
		{map[string]string{"a": "1"}, "junk\x02a\x011\x02", true},    // pieces that decode to nothing
	} {
		if got := sameProperties(tc.p, []byte(tc.enc)); got != tc.want {
			t.Errorf("sameProperties(%v, %q) = %v, want %v", tc.p, tc.enc, got, tc.want)
		}
	}
}

type anyone struct{}

func (anyone) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	return hook.Principal{Name: c.Username}, nil
}

// TestAuthenticateBadCertificate: a certificate that does not parse is
// the host's error, not a client to let in.
func TestAuthenticateBadCertificate(t *testing.T) {
	s := &server{impl: anyone{}}
	_, err := s.Authenticate(context.Background(), &pluginpb.AuthenticateRequest{Username: "u", Certificate: []byte("not DER")})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Authenticate with a bad certificate: %v; want InvalidArgument", err)
	}
	r, err := s.Authenticate(context.Background(), &pluginpb.AuthenticateRequest{Username: "u"})
	if err != nil || r.GetPrincipal().GetName() != "u" {
		t.Fatalf("Authenticate = %v, %v", r, err)
	}
}
