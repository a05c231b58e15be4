package server

import (
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// serveForTest opens an engine with eo in a temporary directory, serves a
// Server with so on its transport bound to a loopback port (so's Endpoint
// defaults to that port), and dials it with grpc-go. Everything is
// stopped when the test ends: the client, the server, the transport
// (gracefully, for at most 5 s), then the engine.
func serveForTest(t testing.TB, eo engine.Options, so Options) (*engine.Engine, *Server, *grpc.ClientConn, *net.TCPAddr) {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), &eo)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if so.Endpoint == "" {
		so.Endpoint = ln.Addr().String()
	}
	srv, err := New(eng, so)
	if err != nil {
		t.Fatal(err)
	}
	g := srv.NewTransport(nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(ln) }()
	conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Close()
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Error("graceful stop took more than 5s")
			g.Stop()
		}
		if err := <-served; err != nil && err != transport.ErrServerStopped {
			t.Errorf("serve: %v", err)
		}
		if err := eng.Close(); err != nil {
			t.Errorf("engine close: %v", err)
		}
	})
	return eng, srv, conn, ln.Addr().(*net.TCPAddr)
}
