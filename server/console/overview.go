package console

import (
	"time"

	"github.com/karmanmq/karman/engine"
)

// Overview is the answer of GET /overview: the node, its front-ends, the
// disk and the totals since the server started. Rates are for the caller
// to derive from two overviews (At and the totals).
type Overview struct {
	Version string `json:"version"`
	Cluster string `json:"cluster"`
	Broker  string `json:"broker"`
	// Role is the node's replication role; "master" while replication
	// does not exist.
	Role string `json:"role"`
	// Addrs are the bound addresses by front-end ("broker", "grpc",
	// "namesrv", "http").
	Addrs map[string]string `json:"addrs"`
	// Modules are the ids of the server's modules, in start order.
	Modules []string `json:"modules"`
	// Compiled are the modules compiled in, running or not, with their
	// versions.
	Compiled []Module `json:"compiled"`
	// Status is what modules report of themselves, by module id: the
	// process plugins' counters ("plugin.process"), replication
	// ("cluster.ha").
	Status   map[string]any `json:"status"`
	At       int64          `json:"at"`      // ms since the epoch
	Started  int64          `json:"started"` // ms since the epoch
	Topics   int            `json:"topics"`
	Groups   int            `json:"groups"`
	Online   int            `json:"consumersOnline"`
	Messages Totals         `json:"messages"`
	Disk     Disk           `json:"disk"`
}

// Module is a module compiled into the server.
type Module struct {
	ID string `json:"id"`
	// Running: selected and not turned off (its address "off").
	Running bool `json:"running"`
	// Package is its Go package; Module and Version the Go module that
	// provides it in this build ("(devel)" from a source tree).
	Package string `json:"package"`
	Module  string `json:"module"`
	Version string `json:"version"`
}

// Totals are message counters since the server started, over user and
// system topics.
type Totals struct {
	In       int64 `json:"in"`
	BytesIn  int64 `json:"bytesIn"`
	Out      int64 `json:"out"`
	BytesOut int64 `json:"bytesOut"`
	Stored   int64 `json:"stored"` // held in the queues now
}

// Disk is the commit log's disk state.
type Disk struct {
	State           string `json:"state"` // ok, full, failed
	Reason          string `json:"reason,omitempty"`
	LogBytes        int64  `json:"logBytes"`
	FileSystemUsed  uint64 `json:"fileSystemUsed"`
	FileSystemTotal uint64 `json:"fileSystemTotal"`
	DispatchLag     int64  `json:"dispatchLagBytes"`
}

func (a *API) overview(r *request) (any, error) {
	st := r.eng.Stats()
	o := Overview{
		Version: a.o.Version, Cluster: a.o.Cluster, Broker: a.o.Broker, Role: "master",
		Addrs: map[string]string{}, Modules: append([]string{}, a.o.Modules...), At: time.Now().UnixMilli(), Started: a.o.Started.UnixMilli(),
		Topics: len(st.Topics),
		Disk: Disk{State: "ok", LogBytes: st.DiskBytes, FileSystemUsed: st.FileSystemUsed, FileSystemTotal: st.FileSystemTotal,
			DispatchLag: max(st.LogEndOffset-st.DispatchedOffset, 0)},
	}
	if a.o.Addrs != nil {
		o.Addrs = a.o.Addrs()
	}
	o.Compiled = append([]Module{}, a.o.Compiled...)
	o.Status = map[string]any{}
	if a.o.Status != nil {
		o.Status = a.o.Status()
	}
	if a.o.Role != nil {
		if role := a.o.Role(); role != "" {
			o.Role = role
		}
	}
	switch st.Health.Disk {
	case engine.DiskOK:
	case engine.DiskFailed:
		o.Disk.State, o.Disk.Reason = "failed", st.Health.Reason
	default:
		o.Disk.State, o.Disk.Reason = "full", st.Health.Reason
	}
	for _, t := range st.Topics {
		o.Messages.In += t.MessagesIn
		o.Messages.BytesIn += t.BytesIn
		o.Messages.Out += t.MessagesOut
		o.Messages.BytesOut += t.BytesOut
		o.Messages.Stored += t.Depth
	}
	_, names := groupNames(r.eng)
	o.Groups = len(names)
	for _, g := range names {
		o.Online += len(r.eng.Clients().ConsumerIDs(g))
	}
	return o, nil
}
