package session

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
)

// ErrNoStream reports a command for a client with no telemetry stream open.
var ErrNoStream = errors.New("session: client has no telemetry stream")

// ErrStreamFull reports a command dropped because the client does not read
// its telemetry stream fast enough.
var ErrStreamFull = errors.New("session: telemetry stream backlog full")

// outboxSize bounds the commands queued for one telemetry stream.
const outboxSize = 64

// Session is one client.
type Session struct {
	id         string
	gone       chan struct{} // closed when the table drops the session
	terminated atomic.Bool   // dropped because the client said it ends

	mu          sync.Mutex
	remote      string
	remoteAddr  net.Addr // what remote was formatted from
	settings    *rmqpb.Settings
	language    rmqpb.Language // of settings' user agent
	maxAttempts int32          // of settings' backoff policy
	stream      *Stream
	seen        time.Time
}

// ID returns the client id (x-mq-client-id).
func (s *Session) ID() string { return s.id }

// RemoteAddr returns the address of the client's latest request. It makes a
// Session usable as the engine registry's connection handle.
func (s *Session) RemoteAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.remote
}

// Settings returns a copy of the settings the client last declared, or nil
// before the first.
func (s *Session) Settings() *rmqpb.Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settings == nil {
		return nil
	}
	return proto.Clone(s.settings).(*rmqpb.Settings)
}

// SetSettings records the settings the client declared.
func (s *Session) SetSettings(st *rmqpb.Settings) {
	c := proto.Clone(st).(*rmqpb.Settings)
	s.mu.Lock()
	s.settings = c
	s.language = c.GetUserAgent().GetLanguage()
	s.maxAttempts = c.GetBackoffPolicy().GetMaxAttempts()
	s.mu.Unlock()
}

// Language returns the language of the client's user agent, as its
// settings declared it (LANGUAGE_UNSPECIFIED before the first).
func (s *Session) Language() rmqpb.Language {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.language
}

// MaxAttempts returns the max attempts of the backoff policy in the
// client's settings, 0 when they have none. Unlike Settings it copies
// nothing, for the paths every request takes.
func (s *Session) MaxAttempts() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxAttempts
}

// Gone is closed once the session is dropped from its table: the client
// terminated or expired. Work done on the client's behalf (receipt
// renewal, its telemetry stream) stops then; a later request from the
// same client starts a new session.
func (s *Session) Gone() <-chan struct{} { return s.gone }

// Seen records that the client is alive without a new request, such as a
// message on its telemetry stream.
func (s *Session) Seen() { s.touch("", time.Now()) }

// touch records a request from remote.
func (s *Session) touch(remote string, now time.Time) {
	s.mu.Lock()
	if remote != "" {
		s.remote, s.remoteAddr = remote, nil
	}
	s.seen = now
	s.mu.Unlock()
}

// LastSeen returns when the client last made a request.
func (s *Session) LastSeen() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// Stream is the sending side of one open telemetry stream: commands queued
// with Send are written by the stream's handler, in order.
type Stream struct {
	out  chan *rmqpb.TelemetryCommand
	done chan struct{}
	once sync.Once
}

// Out is the channel the stream's handler writes to the client from.
func (st *Stream) Out() <-chan *rmqpb.TelemetryCommand { return st.out }

// Done is closed when the stream is replaced or detached.
func (st *Stream) Done() <-chan struct{} { return st.done }

func (st *Stream) close() { st.once.Do(func() { close(st.done) }) }

// Attach opens a new telemetry stream for the client, replacing (and
// closing) the previous one. Call Detach with it when the stream ends.
func (s *Session) Attach() *Stream {
	st := &Stream{out: make(chan *rmqpb.TelemetryCommand, outboxSize), done: make(chan struct{})}
	s.mu.Lock()
	old := s.stream
	s.stream = st
	s.mu.Unlock()
	if old != nil {
		old.close()
	}
	return st
}

// Detach closes st and forgets it, unless a newer stream replaced it.
func (s *Session) Detach(st *Stream) {
	s.mu.Lock()
	if s.stream == st {
		s.stream = nil
	}
	s.mu.Unlock()
	st.close()
}

// HasStream reports whether the client has a telemetry stream open.
func (s *Session) HasStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream != nil
}

// Send queues cmd for the client's telemetry stream without waiting.
func (s *Session) Send(cmd *rmqpb.TelemetryCommand) error {
	s.mu.Lock()
	st := s.stream
	s.mu.Unlock()
	if st == nil {
		return ErrNoStream
	}
	select {
	case st.out <- cmd:
		return nil
	case <-st.done:
		return ErrNoStream
	default:
		return ErrStreamFull
	}
}

// Table holds the sessions of one server. Every request looks its client
// up, so lookups share the lock.
type Table struct {
	mu sync.RWMutex
	m  map[string]*Session
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{m: map[string]*Session{}} }

// Touch returns the session of client id, creating it, and records a
// request from remote.
func (t *Table) Touch(id, remote string) *Session {
	now := time.Now()
	t.mu.RLock()
	s, ok := t.m[id]
	t.mu.RUnlock()
	if !ok {
		t.mu.Lock()
		if s, ok = t.m[id]; !ok {
			s = &Session{id: id, gone: make(chan struct{})}
			t.m[id] = s
		}
		t.mu.Unlock()
	}
	s.touch(remote, now)
	return s
}

// TouchAddr is Touch with the client's address as a net.Addr, formatted
// only when it is not the one the session last saw.
func (t *Table) TouchAddr(id string, addr net.Addr) *Session {
	s := t.Touch(id, "")
	if addr == nil {
		return s
	}
	s.mu.Lock()
	if !sameAddr(addr, s.remoteAddr) {
		s.remoteAddr, s.remote = addr, addr.String()
	}
	s.mu.Unlock()
	return s
}

// sameAddr reports whether a and b are the same TCP address object (a
// connection's calls share its address).
func sameAddr(a, b net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	tb, _ := b.(*net.TCPAddr)
	return ok && ta == tb
}

// Lookup returns the session of client id, if the table has one.
func (t *Table) Lookup(id string) (*Session, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.m[id]
	return s, ok
}

// Terminate forgets client id, a client that said it terminates
// (NotifyClientTermination): it closes the session's telemetry stream and
// its Gone channel, and returns the session it dropped. See Terminated.
func (t *Table) Terminate(id string) (*Session, bool) {
	t.mu.Lock()
	s, ok := t.m[id]
	delete(t.m, id)
	t.mu.Unlock()
	if ok {
		s.terminated.Store(true) // before Gone is closed
		s.drop()
	}
	return s, ok
}

// Terminated reports whether the session was dropped by Terminate: the
// client ends its telemetry stream itself, and a server that ended it
// first would make some clients open a new one while shutting down.
func (s *Session) Terminated() bool { return s.terminated.Load() }

// Expire drops the sessions that made no request and sent no telemetry
// message since before, as Terminate does (but not as terminated), and
// returns them.
func (t *Table) Expire(before time.Time) []*Session {
	var out []*Session
	t.mu.Lock()
	for id, s := range t.m {
		if s.LastSeen().Before(before) {
			delete(t.m, id)
			out = append(out, s)
		}
	}
	t.mu.Unlock()
	for _, s := range out {
		s.drop()
	}
	return out
}

// drop closes the stream and the Gone channel of a session just removed
// from its table (which happens once).
func (s *Session) drop() {
	s.mu.Lock()
	st := s.stream
	s.stream = nil
	s.mu.Unlock()
	if st != nil {
		st.close()
	}
	close(s.gone)
}

// Idle returns the sessions with no telemetry stream that made no request
// since before.
func (t *Table) Idle(before time.Time) []*Session {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*Session
	for _, s := range t.m {
		if !s.HasStream() && s.LastSeen().Before(before) {
			out = append(out, s)
		}
	}
	return out
}
