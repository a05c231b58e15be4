package rmqauth

import (
	"context"
	"errors"
	"testing"

	"github.com/karmanmq/karman/engine/hook"
)

func TestRemotingContent(t *testing.T) {
	ext := map[string]string{"b": "2", "AccessKey": "ak", "a": "1", "Signature": "ignored", "SecurityToken": "tok"}
	got := string(RemotingContent(ext, []byte("body")))
	// Keys by byte order: AccessKey, SecurityToken, a, b; Signature left out.
	if want := "aktok12body"; got != want {
		t.Fatalf("content %q, want %q", got, want)
	}
}

func TestSignKnownVectors(t *testing.T) {
	// HMAC-SHA1("key", "The quick brown fox jumps over the lazy dog") is
	// de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9 (RFC 2104 examples).
	const msg = "The quick brown fox jumps over the lazy dog"
	if got, want := SignGRPC(msg, "key"), "DE7C9B85B8B78AA6BC8A7A36F70A90701C9DB4D9"; got != want {
		t.Fatalf("SignGRPC = %s, want %s", got, want)
	}
	if got, want := SignRemoting([]byte(msg), "key"), "3nybhbi3iqa8ino29wqQcBydtNk="; got != want {
		t.Fatalf("SignRemoting = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	content := []byte("ak12body")
	good := &hook.Credentials{AccessKey: "ak", Algorithm: AlgorithmRemoting, Content: content, Signature: SignRemoting(content, "s3cret")}
	grpc := &hook.Credentials{AccessKey: "ak", Algorithm: AlgorithmGRPC, Content: []byte("20240102T030405Z"), Signature: SignGRPC("20240102T030405Z", "s3cret")}
	for _, tc := range []struct {
		name   string
		c      *hook.Credentials
		secret string
		want   error
	}{
		{"remoting ok", good, "s3cret", nil},
		{"grpc ok", grpc, "s3cret", nil},
		{"grpc lower-case hex", &hook.Credentials{Algorithm: AlgorithmGRPC, Content: grpc.Content, Signature: "de7c"}, "s3cret", ErrBadSignature},
		{"wrong secret", good, "other", ErrBadSignature},
		{"changed content", &hook.Credentials{Algorithm: AlgorithmRemoting, Content: []byte("ak12bodX"), Signature: good.Signature}, "s3cret", ErrBadSignature},
		{"no signature", &hook.Credentials{Algorithm: AlgorithmRemoting}, "s3cret", ErrNoSignature},
		{"bad base64", &hook.Credentials{Algorithm: AlgorithmRemoting, Signature: "!!"}, "s3cret", ErrMalformed},
		{"bad hex", &hook.Credentials{Algorithm: AlgorithmGRPC, Signature: "XYZ"}, "s3cret", ErrMalformed},
		{"unknown algorithm", &hook.Credentials{Algorithm: "MD5", Signature: "00"}, "s3cret", ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.c, tc.secret)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, hook.ErrUnauthenticated) {
				t.Fatalf("err %v, want %v and hook.ErrUnauthenticated", err, tc.want)
			}
		})
	}
}

func TestParseAuthorization(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Authorization
		wantErr bool
	}{
		{in: "MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=x-mq-date-time, Signature=ABCD",
			want: Authorization{"MQv2-HMAC-SHA1", "ak", []string{"x-mq-date-time"}, "ABCD"}},
		{in: "MQv2-HMAC-SHA1 Credential=ak/region/x,Signature=AB,Extra=1",
			want: Authorization{Algorithm: "MQv2-HMAC-SHA1", AccessKey: "ak", Signature: "AB"}},
		{in: "", wantErr: true},
		{in: "MQv2-HMAC-SHA1", wantErr: true},
		{in: "MQv2-HMAC-SHA1 Signature=AB", wantErr: true},
		{in: "MQv2-HMAC-SHA1 Credential=ak", wantErr: true},
		{in: "MQv2-HMAC-SHA1 Credential", wantErr: true},
	} {
		got, err := ParseAuthorization(tc.in)
		if tc.wantErr {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%q: err %v, want ErrMalformed", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got.Algorithm != tc.want.Algorithm || got.AccessKey != tc.want.AccessKey || got.Signature != tc.want.Signature ||
			len(got.SignedHeaders) != len(tc.want.SignedHeaders) {
			t.Errorf("%q: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestKeys(t *testing.T) {
	k := Keys{"ak": "s3cret"}
	content := []byte("x")
	ctx := context.Background()
	p, err := k.Authenticate(ctx, &hook.Credentials{AccessKey: "ak", Algorithm: AlgorithmRemoting, Content: content, Signature: SignRemoting(content, "s3cret")})
	if err != nil || p.Name != "ak" {
		t.Fatalf("principal %+v, err %v", p, err)
	}
	if _, err := k.Authenticate(ctx, &hook.Credentials{AccessKey: "nobody", Algorithm: AlgorithmRemoting, Signature: "AA=="}); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := k.Authenticate(ctx, &hook.Credentials{}); !errors.Is(err, hook.ErrUnauthenticated) {
		t.Fatalf("no credentials: %v", err)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=x-mq-date-time, Signature=ABCD")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAuthorization(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if a.AccessKey == "" || a.Signature == "" || a.Algorithm == "" {
			t.Fatalf("accepted %q without a field: %+v", s, a)
		}
	})
}
