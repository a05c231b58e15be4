package server

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/server/console"
	"github.com/karmanmq/karman/server/metrics"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpServer returns the server for /healthz, /metrics and the API
// (package console) under /api/v1/, and the web console at / (its
// assets under /ui/).
func (s *Server) httpServer(ms *metrics.Set) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(ms.Registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		Registry: ms.Registry,
	}))
	addrs := map[string]string{}
	for name, a := range s.addrs { // bound before the HTTP server is made
		addrs[name] = a.String()
	}
	var (
		modules   []string
		routes    []console.Route
		compiled  []console.Module
		reporters = map[string]StatusReporter{}
		role      func() string
	)
	running := map[ModuleID]bool{}
	for _, m := range s.mods {
		id := info(m).ID
		running[id] = true
		modules = append(modules, string(id))
		if p, ok := m.(APIProvider); ok {
			routes = append(routes, p.APIRoutes()...)
		}
		if r, ok := m.(StatusReporter); ok {
			reporters[string(id)] = r
		}
		if r, ok := m.(RoleReporter); ok && role == nil {
			role = r.ReplicationRole
		}
	}
	bi, _ := debug.ReadBuildInfo()
	for _, m := range s.o.Modules {
		id := info(m).ID
		b := BuildOf(m, bi)
		compiled = append(compiled, console.Module{ID: string(id), Running: running[id], Package: b.Package, Module: b.Module, Version: b.Version})
	}
	status := func() map[string]any {
		out := make(map[string]any, len(reporters))
		for id, r := range reporters {
			if v := r.Status(); v != nil {
				out[id] = v
			}
		}
		return out
	}
	mux.Handle(console.Prefix, console.New(console.Options{
		Modules:    modules,
		Engine:     s.withEngine,
		Version:    s.o.Version,
		Cluster:    flagValue(s.o, "broker-cluster", "DefaultCluster"),
		Broker:     flagValue(s.o, "broker-name", "broker-a"),
		Addrs:      func() map[string]string { return maps.Clone(addrs) },
		Started:    time.Now(),
		Logger:     s.log.With("component", "api"),
		Routes:     routes,
		LagHistory: s.lag,
		Compiled:   compiled,
		Status:     status,
		Role:       role,
		NameServers: func() []string {
			// Those the broker registers with: its flag's, else this
			// process's own name server.
			if v := flagValue(s.o, "broker-namesrv", ""); v != "" {
				return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
			}
			if a, ok := addrs["namesrv"]; ok {
				return []string{a}
			}
			return nil
		},
	}))
	ui := console.UI()
	mux.Handle("GET /{$}", ui)
	mux.Handle("GET /ui/", ui)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// health is the JSON body of /healthz.
type health struct {
	Status string `json:"status"` // ok, starting, stopping, disk-full, disk-failed
	Reason string `json:"reason,omitempty"`
	Since  string `json:"since,omitempty"` // RFC 3339, when the disk state began
	// DiskUsed and DiskTotal are the bytes of the data's file system.
	DiskUsed  uint64 `json:"diskUsedBytes,omitempty"`
	DiskTotal uint64 `json:"diskTotalBytes,omitempty"`
}

// healthz answers 200 {"status":"ok"} while the server is ready and its
// disk takes writes, 503 otherwise: while starting or stopping, and while
// the engine refuses writes because its disk is full or failed, with the
// reason.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	h := health{Status: "stopping"}
	switch s.State() {
	case Ready:
		h.Status = "ok"
		s.mu.RLock()
		if s.eng != nil {
			eh := s.eng.Health()
			switch eh.Disk {
			case engine.DiskOK:
			case engine.DiskFailed:
				h.Status = "disk-failed"
			default:
				h.Status = "disk-full"
			}
			if eh.Disk != engine.DiskOK {
				h.Reason, h.Since = eh.Reason, eh.Since.UTC().Format(time.RFC3339)
				h.DiskUsed, h.DiskTotal = eh.Used, eh.Total
			}
		}
		s.mu.RUnlock()
	case Starting:
		h.Status = "starting"
	}
	if h.Status != "ok" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(h)
}
