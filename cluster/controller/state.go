package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Errors of the controller. Each answer of the request API names one of
// them in its "code" field, and the Client turns it back into the
// sentinel, so errors.Is works on both sides of the wire.
var (
	ErrBadRequest    = errors.New("controller: bad request")
	ErrMismatch      = errors.New("controller: broker disagrees with the controller's record")
	ErrUnknownGroup  = errors.New("controller: unknown broker group")
	ErrUnknownBroker = errors.New("controller: unknown broker")
	ErrFenced        = errors.New("controller: not the master of the current epoch")
	ErrNoCandidate   = errors.New("controller: no broker may be elected")
	ErrNotLeader     = errors.New("controller: not the leader")
)

// Member is one broker of a group as the controller records it.
type Member struct {
	BrokerID int64  `json:"brokerId"`
	Addr     string `json:"addr"`
	HAAddr   string `json:"haAddr"`
}

// Group is the controller's record of one broker group: its members, its
// master (0: none) and the master's epoch, and the in-sync set (RIP-44's
// SyncStateSet) with its own epoch.
type Group struct {
	Cluster           string           `json:"cluster"`
	Name              string           `json:"name"`
	Members           map[int64]Member `json:"members"`
	MasterID          int64            `json:"masterId"`
	MasterEpoch       int32            `json:"masterEpoch"`
	SyncStateSet      []int64          `json:"syncStateSet"`
	SyncStateSetEpoch int32            `json:"syncStateSetEpoch"`
}

// Master returns the master's record, if the group has one.
func (g *Group) Master() (Member, bool) {
	if g.MasterID == 0 {
		return Member{}, false
	}
	m, ok := g.Members[g.MasterID]
	return m, ok
}

// InSync reports whether id is in the group's in-sync set.
func (g *Group) InSync(id int64) bool { return slices.Contains(g.SyncStateSet, id) }

func (g *Group) clone() Group {
	c := *g
	c.Members = make(map[int64]Member, len(g.Members))
	for k, v := range g.Members {
		c.Members[k] = v
	}
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return c
}

// RegisterRequest registers a broker in its group (or updates its
// addresses). The first broker of a new group becomes its master at
// epoch 1.
type RegisterRequest struct {
	Cluster  string `json:"cluster"`
	Group    string `json:"group"`
	BrokerID int64  `json:"brokerId"`
	Addr     string `json:"addr"`
	HAAddr   string `json:"haAddr"`
}

// AlterSyncStateSetRequest is a master's report of its in-sync set. It is
// refused with ErrFenced unless MasterID and MasterEpoch are the group's
// current ones.
type AlterSyncStateSetRequest struct {
	Group        string  `json:"group"`
	MasterID     int64   `json:"masterId"`
	MasterEpoch  int32   `json:"masterEpoch"`
	SyncStateSet []int64 `json:"syncStateSet"`
}

// ElectRequest asks for a new master of Group. BrokerID, when not 0, is
// the preferred candidate; it is still elected only if it may be.
type ElectRequest struct {
	Group    string `json:"group"`
	BrokerID int64  `json:"brokerId,omitempty"`
}

// HeartbeatRequest is a broker's periodic sign of life, with where its log
// ends. It is kept in the leader's memory, not in the raft log.
type HeartbeatRequest struct {
	Group     string `json:"group"`
	BrokerID  int64  `json:"brokerId"`
	Epoch     int32  `json:"epoch"`
	MaxOffset int64  `json:"maxOffset"`
}

// WatchRequest opens a broker's watch connection (Controller.Watch).
type WatchRequest struct {
	Group    string `json:"group"`
	BrokerID int64  `json:"brokerId"`
}

// elect is the raft command of an election: the leader ranks the live
// members (Candidates, best first) and the state machine picks the first
// that may be elected, so every node picks the same.
type elect struct {
	Group      string  `json:"group"`
	Candidates []int64 `json:"candidates"`
	Unclean    bool    `json:"unclean"`
}

// command is one entry of the raft log.
type command struct {
	Register *RegisterRequest          `json:"register,omitempty"`
	Alter    *AlterSyncStateSetRequest `json:"alter,omitempty"`
	Elect    *elect                    `json:"elect,omitempty"`
	// Peers is the peer list a node was started with, written when it
	// starts to lead: every node compares it with its own (see
	// Controller.checkPeers).
	Peers map[string]string `json:"peers,omitempty"`
}

// result is what applying a command answers: the group after it, or why
// it was refused.
type result struct {
	Group Group
	Err   error
	// Peers is the peer list a Peers command wrote.
	Peers map[string]string
}

// state is the replicated state: every broker group by name.
type state struct {
	Groups map[string]*Group `json:"groups"`
	// Peers is the peer list the latest leader was started with.
	Peers map[string]string `json:"peers,omitempty"`
}

func newState() *state { return &state{Groups: map[string]*Group{}} }

// apply decodes and applies one raft log entry. Bad entries are refused
// with an error and change nothing.
func (s *state) apply(data []byte) result {
	var c command
	if err := json.Unmarshal(data, &c); err != nil {
		return result{Err: fmt.Errorf("%w: command: %w", ErrBadRequest, err)}
	}
	n := 0
	for _, set := range []bool{c.Register != nil, c.Alter != nil, c.Elect != nil, c.Peers != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return result{Err: fmt.Errorf("%w: a command holds exactly one operation, not %d", ErrBadRequest, n)}
	}
	switch {
	case c.Register != nil:
		return s.register(c.Register)
	case c.Alter != nil:
		return s.alter(c.Alter)
	case c.Peers != nil:
		if len(c.Peers) == 0 {
			return result{Err: fmt.Errorf("%w: an empty peer list", ErrBadRequest)}
		}
		s.Peers = maps.Clone(c.Peers)
		return result{Peers: maps.Clone(c.Peers)}
	default:
		return s.elect(c.Elect)
	}
}

func (s *state) register(r *RegisterRequest) result {
	switch {
	case r.Group == "" || r.Cluster == "":
		return result{Err: fmt.Errorf("%w: register: cluster and group are required", ErrBadRequest)}
	case r.BrokerID < 1:
		return result{Err: fmt.Errorf("%w: register: broker id %d, want 1 or more", ErrBadRequest, r.BrokerID)}
	case r.Addr == "" || r.HAAddr == "":
		return result{Err: fmt.Errorf("%w: register: broker %d of %s has no address or HA address", ErrBadRequest, r.BrokerID, r.Group)}
	}
	g, ok := s.Groups[r.Group]
	if !ok {
		g = &Group{Cluster: r.Cluster, Name: r.Group, Members: map[int64]Member{}}
		s.Groups[r.Group] = g
	}
	if g.Cluster != r.Cluster {
		return result{Err: fmt.Errorf("%w: group %s belongs to cluster %s, not %s", ErrMismatch, r.Group, g.Cluster, r.Cluster)}
	}
	g.Members[r.BrokerID] = Member{BrokerID: r.BrokerID, Addr: r.Addr, HAAddr: r.HAAddr}
	if g.MasterID == 0 && g.MasterEpoch == 0 {
		// A group that never had a master: its first broker has all
		// there is.
		g.MasterID = r.BrokerID
		g.MasterEpoch = 1
		g.SyncStateSet = []int64{r.BrokerID}
		g.SyncStateSetEpoch = 1
	}
	return result{Group: g.clone()}
}

func (s *state) alter(r *AlterSyncStateSetRequest) result {
	g, ok := s.Groups[r.Group]
	if !ok {
		return result{Err: fmt.Errorf("%w: %q", ErrUnknownGroup, r.Group)}
	}
	if r.MasterID != g.MasterID || r.MasterEpoch != g.MasterEpoch {
		return result{Err: fmt.Errorf("%w: group %s: broker %d at epoch %d reports, the master is %d at epoch %d",
			ErrFenced, r.Group, r.MasterID, r.MasterEpoch, g.MasterID, g.MasterEpoch)}
	}
	set := slices.Clone(r.SyncStateSet)
	slices.Sort(set)
	set = slices.Compact(set)
	if !slices.Contains(set, g.MasterID) {
		return result{Err: fmt.Errorf("%w: group %s: the in-sync set %v leaves out its master %d", ErrBadRequest, r.Group, set, g.MasterID)}
	}
	for _, id := range set {
		if _, ok := g.Members[id]; !ok {
			return result{Err: fmt.Errorf("%w: group %s: in-sync broker %d is not registered", ErrUnknownBroker, r.Group, id)}
		}
	}
	if !slices.Equal(set, g.SyncStateSet) {
		g.SyncStateSet = set
		g.SyncStateSetEpoch++
	}
	return result{Group: g.clone()}
}

func (s *state) elect(e *elect) result {
	g, ok := s.Groups[e.Group]
	if !ok {
		return result{Err: fmt.Errorf("%w: %q", ErrUnknownGroup, e.Group)}
	}
	for _, id := range e.Candidates {
		if _, ok := g.Members[id]; !ok {
			continue
		}
		if !e.Unclean && !g.InSync(id) {
			continue
		}
		g.MasterID = id
		g.MasterEpoch++
		g.SyncStateSet = []int64{id}
		g.SyncStateSetEpoch++
		return result{Group: g.clone()}
	}
	return result{Group: g.clone(), Err: fmt.Errorf("%w: group %s: none of %v is live and in sync %v",
		ErrNoCandidate, e.Group, e.Candidates, g.SyncStateSet)}
}

// group returns a copy of one group's record.
func (s *state) group(name string) (Group, bool) {
	g, ok := s.Groups[name]
	if !ok {
		return Group{}, false
	}
	return g.clone(), true
}
