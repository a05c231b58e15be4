package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/hashicorp/raft"
)

// fsm is the raft state machine over state; its lock lets the request
// API read while raft applies.
type fsm struct {
	mu sync.RWMutex
	s  *state
	// onPeers, when set, gets every peer list a leader wrote (and the
	// one a restored snapshot holds): a side effect on this node only.
	onPeers func(map[string]string)
}

var _ raft.FSM = (*fsm)(nil)

func (f *fsm) Apply(l *raft.Log) any {
	f.mu.Lock()
	res := f.s.apply(l.Data)
	f.mu.Unlock()
	if res.Peers != nil && f.onPeers != nil {
		f.onPeers(res.Peers)
	}
	return res
}

func (f *fsm) read(fn func(*state)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.s)
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := json.Marshal(f.s)
	if err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	return snapshot(b), nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s, err := decodeState(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.s = s
	f.mu.Unlock()
	if s.Peers != nil && f.onPeers != nil {
		f.onPeers(maps.Clone(s.Peers))
	}
	return nil
}

// decodeState reads a snapshot, refusing one whose groups do not hold
// together.
func decodeState(r io.Reader) (*state, error) {
	s := newState()
	if err := json.NewDecoder(r).Decode(s); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %w", ErrBadRequest, err)
	}
	if s.Groups == nil {
		s.Groups = map[string]*Group{}
	}
	for name, g := range s.Groups {
		if g == nil || g.Name != name {
			return nil, fmt.Errorf("%w: snapshot: group %q is not named for its key", ErrBadRequest, name)
		}
		if g.Members == nil {
			g.Members = map[int64]Member{}
		}
	}
	return s, nil
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return fmt.Errorf("controller: snapshot: %w", err)
	}
	return sink.Close()
}

func (snapshot) Release() {}
