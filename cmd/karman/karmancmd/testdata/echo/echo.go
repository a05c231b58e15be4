// Package echo is a Karman server module, frontend.echo, kept apart from
// Karman in its own Go module: it listens on --echo-addr and writes every
// line it reads back, prefixed with --echo-prefix. Importing it registers
// it; "karman build --with example.com/karman-echo" compiles it into a
// karman binary.
package echo

import (
	"bufio"
	"context"
	"net"
	"sync"

	"github.com/karmanmq/karman/server"
	"github.com/spf13/pflag"
)

var info = server.ModuleInfo{
	ID:          "frontend.echo",
	DefaultAddr: "127.0.0.1:7007",
	Usage:       "echo listen address",
	New:         func() server.Module { return &Module{conns: map[net.Conn]struct{}{}} },
}

func init() { server.RegisterModule(info) }

// Module echoes lines on its listener.
type Module struct {
	prefix string

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

var (
	_ server.FlagBinder = (*Module)(nil)
	_ server.Starter    = (*Module)(nil)
	_ server.Stopper    = (*Module)(nil)
)

// KarmanModule implements server.Module.
func (m *Module) KarmanModule() server.ModuleInfo { return info }

// BindFlags adds --echo-prefix.
func (m *Module) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&m.prefix, "echo-prefix", "", "text written before every echoed line")
}

// Start accepts connections until Stop.
func (m *Module) Start(_ context.Context, h server.Host) error {
	m.mu.Lock()
	m.ln = h.Listener
	m.mu.Unlock()
	m.wg.Go(func() {
		for {
			c, err := h.Listener.Accept()
			if err != nil {
				return
			}
			m.mu.Lock()
			if m.closed {
				m.mu.Unlock()
				c.Close()
				return
			}
			m.conns[c] = struct{}{}
			m.mu.Unlock()
			m.wg.Go(func() { m.serve(c) })
		}
	})
	return nil
}

// serve echoes c's lines until it closes.
func (m *Module) serve(c net.Conn) {
	defer func() {
		m.mu.Lock()
		delete(m.conns, c)
		m.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if _, err := c.Write([]byte(m.prefix + sc.Text() + "\n")); err != nil {
			return
		}
	}
}

// Stop closes the listener and every connection and waits for their
// goroutines, or for ctx.
func (m *Module) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	if m.ln != nil {
		m.ln.Close()
	}
	for c := range m.conns {
		c.Close()
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
