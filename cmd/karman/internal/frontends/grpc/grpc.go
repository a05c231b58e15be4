package grpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/karmanmq/karman/cmd/karman/internal/frontend"
	brokerfe "github.com/karmanmq/karman/cmd/karman/internal/frontends/broker"
	"github.com/karmanmq/karman/protocol/grpc/server"
	"github.com/karmanmq/karman/protocol/grpc/transport"
	"github.com/spf13/pflag"
)

// Name and DefaultAddr of the front-end.
const (
	Name        = "grpc"
	DefaultAddr = ":8081"
)

// Frontend is the gRPC front-end.
var Frontend = frontend.Frontend{
	Name:        Name,
	DefaultAddr: DefaultAddr,
	Usage:       "RocketMQ 5 gRPC listen address",
	Start:       Start,
	Flags:       BindFlags,
}

func init() { frontend.Register(Frontend) }

// Config holds the front-end's own settings.
type Config struct {
	// AdvertiseAddr is the "host:port" clients are told to dial; empty
	// derives it from the listener.
	AdvertiseAddr string
	// TLSCert and TLSKey are the PEM files of the certificate served to
	// clients that open with TLS; empty: a self-signed one.
	TLSCert, TLSKey string
}

// BindFlags adds the front-end's flags to fs and returns the Config they
// fill.
func BindFlags(fs *pflag.FlagSet) any {
	c := &Config{}
	fs.StringVar(&c.AdvertiseAddr, Name+"-advertise-addr", "", "host:port gRPC clients are routed to (default: derived from --grpc-addr)")
	fs.StringVar(&c.TLSCert, Name+"-tls-cert", "", "PEM certificate for gRPC clients that use TLS, served on the same port as plaintext (default: a self-signed one)")
	fs.StringVar(&c.TLSKey, Name+"-tls-key", "", "PEM private key of --grpc-tls-cert")
	return c
}

// Start serves the MessagingService on h.Listener.
func Start(ctx context.Context, h frontend.Host) (stop func(context.Context) error, err error) {
	cfg, _ := h.Config.(*Config)
	if cfg == nil {
		cfg = &Config{}
	}
	if h.Logger == nil {
		h.Logger = slog.New(slog.DiscardHandler)
	}
	endpoint := cfg.AdvertiseAddr
	if endpoint == "" {
		if endpoint, err = brokerfe.Advertise(h.Listener.Addr(), ""); err != nil {
			return nil, err
		}
	}
	srv, err := server.New(h.Engine, server.Options{
		Endpoint:         endpoint,
		Logger:           h.Logger,
		MaxBodySize:      h.EngineOptions.MaxMessageSize,
		AutoCreateTopics: h.EngineOptions.AutoCreateTopics,
		AutoCreateGroups: h.EngineOptions.AutoCreateGroups,
		DefaultQueues:    h.EngineOptions.DefaultQueues,
	})
	if err != nil {
		return nil, err
	}
	tc, err := tlsConfig(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, err
	}
	g := srv.NewTransport(tc)
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("grpc: %w", err)
	}
	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- g.Serve(h.Listener) })
	h.Logger.Info("grpc serving", "advertise", endpoint)

	return func(ctx context.Context) error {
		errs := []error{srv.Close()}
		stopped := make(chan struct{})
		go func() { g.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			g.Stop()
			<-stopped
		}
		wg.Wait()
		if serr := <-serveErr; serr != nil && !errors.Is(serr, transport.ErrServerStopped) {
			errs = append(errs, serr)
		}
		return errors.Join(errs...)
	}, nil
}
