package transport_test

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

func tlsOptions(t *testing.T) transport.Options {
	t.Helper()
	cert, err := selfSignedCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return transport.Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}}
}

// TestTLSAndPlaintextOnOnePort serves a TLS client and a plaintext one
// on the same listener.
func TestTLSAndPlaintextOnOnePort(t *testing.T) {
	creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	_, _, secure, _ := serve(t, tlsOptions(t), grpc.WithTransportCredentials(creds))
	ctx := testContext(t)
	resp, err := secure.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 70000, Payload: payload(70000)})
	if err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	if len(resp.GetPayload().GetBody()) != 70000 {
		t.Fatalf("over TLS: %d bytes", len(resp.GetPayload().GetBody()))
	}
	// The same server, in plaintext: serve dialed it with the credentials
	// above, so dial it again without them.
	addr := startRaw(t, tlsOptions(t))
	for _, dial := range []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithTransportCredentials(creds)} {
		cc, err := grpc.NewClient(addr, dial)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := testpb.NewTestServiceClient(cc).EmptyCall(ctx, &testpb.Empty{}); err != nil {
			t.Fatalf("%v", err)
		}
		cc.Close()
	}
}

// TestBadTLSHandshake sends a TLS record that is no client hello: the
// connection closes and the server goes on.
func TestBadTLSHandshake(t *testing.T) {
	addr := startRaw(t, tlsOptions(t))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte{0x16, 3, 1, 0, 5, 'h', 'e', 'l', 'l', 'o'})
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
	conn.Close()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := testpb.NewTestServiceClient(cc).EmptyCall(testContext(t), &testpb.Empty{}); err != nil {
		t.Fatalf("after a bad handshake: %v", err)
	}
}
