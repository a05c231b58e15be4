package jetstream

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ServerOptions configure Start.
type ServerOptions struct {
	// Dir is the JetStream store directory. Default: a new temporary
	// directory, removed by Close.
	Dir string
	// SyncAlways makes the server sync every write to disk before
	// acknowledging it (sync_interval: always). Default: the server's
	// periodic sync.
	SyncAlways bool
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns     *server.Server
	dir    string
	remove bool
}

// Start runs a NATS server with JetStream in this process, listening on
// a free loopback port.
func Start(o ServerOptions) (*Server, error) {
	s := &Server{dir: o.Dir}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "karman-bench-nats-")
		if err != nil {
			return nil, fmt.Errorf("jetstream: %w", err)
		}
		s.dir, s.remove = d, true
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "bench",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   s.dir,
		SyncAlways: o.SyncAlways,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		s.cleanup()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		s.cleanup()
		return nil, errors.New("jetstream: server not ready after 10s")
	}
	if !ns.JetStreamEnabled() {
		ns.Shutdown()
		s.cleanup()
		return nil, errors.New("jetstream: server started without JetStream")
	}
	s.ns = ns
	return s, nil
}

// URL returns the address clients connect to.
func (s *Server) URL() string { return s.ns.ClientURL() }

// Close shuts the server down and removes a temporary store directory.
func (s *Server) Close() error {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	return s.cleanup()
}

func (s *Server) cleanup() error {
	if s.remove {
		return os.RemoveAll(s.dir)
	}
	return nil
}
