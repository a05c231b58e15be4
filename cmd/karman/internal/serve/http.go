package serve

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/metrics"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpServer returns the server for /healthz and /metrics.
func (s *server) httpServer(ms *metrics.Set) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(ms.Registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		Registry: ms.Registry,
	}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "karman %s\n\n/healthz  200 once ready, 503 while starting or stopping\n/metrics  Prometheus metrics\n", s.o.Version)
	})
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// healthz answers 200 "ok" while the server is ready, 503 otherwise.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch s.state.Load() {
	case ready:
		fmt.Fprintln(w, "ok")
	case starting:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "starting")
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "stopping")
	}
}
