package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	mqttserver "github.com/karmanmq/karman/protocol/mqtt/server"
	karman "github.com/karmanmq/karman/server"
)

// ID, Name and DefaultAddr of the module.
const (
	ID          karman.ModuleID = "frontend.mqtt"
	Name                        = "mqtt"
	DefaultAddr                 = ":1883"

	DefaultWSAddr  = ":8083"
	DefaultTLSAddr = ":8883"
	// WSPath is the path of the WebSocket endpoint.
	WSPath = "/mqtt"
)

// Info describes the module.
var Info = karman.ModuleInfo{
	ID:          ID,
	New:         func() karman.Module { return &Module{} },
	Name:        Name,
	DefaultAddr: DefaultAddr,
	Usage:       "MQTT listen address (TCP)",
	Deps:        []karman.Dependency{{ID: karman.PluginsID, Optional: true}, {ID: karman.AuthID, Optional: true}},
}

func init() { karman.RegisterModule(Info) }

// Interface guards.
var (
	_ karman.FlagBinder       = (*Module)(nil)
	_ karman.Validator        = (*Module)(nil)
	_ karman.EngineConfigurer = (*Module)(nil)
	_ karman.Starter          = (*Module)(nil)
	_ karman.Stopper          = (*Module)(nil)
	_ karman.Cleaner          = (*Module)(nil)
	_ karman.APIProvider      = (*Module)(nil)
)

// Config holds the module's settings.
type Config struct {
	WSAddr, TLSAddr string // "off" disables
	TLSCert, TLSKey string // PEM files; empty: self-signed
	TLSClientCA     string // PEM file of the CAs client certificates are verified against; empty: none asked for
	MaxInflight     int
	MaxQoS0Lag      int64
	MaxConnections  int
	MaxPacketMemory int64
}

// Module is the MQTT module.
type Module struct {
	Config Config

	router      *route.Router
	tlsConf     *tls.Config
	wsLn, tlsLn net.Listener
	srv         *mqttserver.Server
	live        atomic.Pointer[mqttserver.Server] // srv while it serves, for the API
	httpSrv     *http.Server
	wg          sync.WaitGroup
}

// KarmanModule implements karman.Module.
func (*Module) KarmanModule() karman.ModuleInfo { return Info }

// BindFlags adds the module's flags.
func (m *Module) BindFlags(fs *pflag.FlagSet) {
	c := &m.Config
	fs.StringVar(&c.WSAddr, Name+"-ws-addr", DefaultWSAddr, "MQTT over WebSocket listen address (path "+WSPath+", subprotocol mqtt); off disables it")
	fs.StringVar(&c.TLSAddr, Name+"-tls-addr", DefaultTLSAddr, "MQTT over TLS listen address; off disables it")
	fs.StringVar(&c.TLSCert, Name+"-tls-cert", "", "PEM certificate of the MQTT TLS listener (default: a self-signed one)")
	fs.StringVar(&c.TLSKey, Name+"-tls-key", "", "PEM private key of --mqtt-tls-cert")
	fs.StringVar(&c.TLSClientCA, Name+"-tls-client-ca", "", "PEM file of CA certificates: the TLS listener asks clients for a certificate and verifies one given against them; with --auth its subject's common name is the client's user, no password needed")
	fs.IntVar(&c.MaxInflight, Name+"-max-inflight", 128, "QoS 1 and 2 messages sent to a client and not yet acknowledged, at most (below the client's receive maximum)")
	fs.Int64Var(&c.MaxQoS0Lag, Name+"-max-qos0-lag", 10000, "messages a QoS 0 subscriber may fall behind before the ones in between are dropped and counted")
	fs.IntVar(&c.MaxConnections, Name+"-max-connections", 100000, "open MQTT connections, at most")
	fs.Int64Var(&c.MaxPacketMemory, Name+"-max-packet-memory", 256<<20, "bytes of large MQTT packets held across connections; a connection whose packet does not fit waits, unread")
}

// Validate checks the settings and loads the TLS certificate.
func (m *Module) Validate() error {
	c := &m.Config
	if c.MaxInflight < 1 || c.MaxInflight > 65535 {
		return fmt.Errorf("mqtt: --mqtt-max-inflight %d: want 1..65535", c.MaxInflight)
	}
	if c.MaxQoS0Lag < 1 {
		return fmt.Errorf("mqtt: --mqtt-max-qos0-lag %d: want at least 1", c.MaxQoS0Lag)
	}
	if c.MaxConnections < 1 {
		return fmt.Errorf("mqtt: --mqtt-max-connections %d: want at least 1", c.MaxConnections)
	}
	if c.MaxPacketMemory < 1<<20 {
		return fmt.Errorf("mqtt: --mqtt-max-packet-memory %d: want at least 1 MiB", c.MaxPacketMemory)
	}
	if c.TLSAddr == "off" {
		if c.TLSClientCA != "" {
			return fmt.Errorf("mqtt: --mqtt-tls-client-ca needs the TLS listener (--mqtt-tls-addr is off)")
		}
		return nil
	}
	tc, err := tlsConfig(c.TLSCert, c.TLSKey, c.TLSClientCA)
	if err != nil {
		return err
	}
	m.tlsConf = tc
	return nil
}

// ConfigureEngine installs the router and binds the WebSocket and TLS
// listeners.
func (m *Module) ConfigureEngine(o *engine.Options, _ map[string]net.Addr) error {
	if o.Router != nil {
		return errors.New("mqtt: the engine has a router already; only one front-end may route")
	}
	m.router = route.New()
	o.Router = m.router
	var err error
	if m.Config.WSAddr != "off" {
		if m.wsLn, err = net.Listen("tcp", m.Config.WSAddr); err != nil {
			return fmt.Errorf("mqtt: --mqtt-ws-addr: %w", err)
		}
	}
	if m.Config.TLSAddr != "off" {
		if m.tlsLn, err = net.Listen("tcp", m.Config.TLSAddr); err != nil {
			m.Cleanup()
			return fmt.Errorf("mqtt: --mqtt-tls-addr: %w", err)
		}
	}
	return nil
}

// Start serves MQTT on the listeners.
func (m *Module) Start(ctx context.Context, h karman.Host) error {
	if m.router == nil {
		return errors.New("mqtt: the engine was opened without the MQTT router")
	}
	srv, err := mqttserver.New(h.Engine, m.router, &mqttserver.Options{
		Logger:         h.Logger,
		MaxInflight:    m.Config.MaxInflight,
		MaxQoS0Lag:     m.Config.MaxQoS0Lag,
		MaxConnections: m.Config.MaxConnections,
		// Not below the largest packet: the server raises it to that.
		MaxPacketMemory: m.Config.MaxPacketMemory,
	})
	if err != nil {
		return err
	}
	m.srv = srv
	m.live.Store(srv)
	if h.Metrics != nil {
		registerMetrics(h.Metrics, srv)
	}
	if h.Listener != nil {
		m.wg.Go(func() { srv.Serve(h.Listener) })
	}
	if m.tlsLn != nil {
		ln := tls.NewListener(m.tlsLn, m.tlsConf)
		m.tlsLn = nil
		m.wg.Go(func() { srv.Serve(ln) })
		if h.Announce != nil {
			h.Announce(Name+"-tls", ln.Addr())
		}
	}
	if m.wsLn != nil {
		mux := http.NewServeMux()
		mux.HandleFunc(WSPath, func(w http.ResponseWriter, r *http.Request) { serveWS(srv, w, r) })
		m.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		ln := m.wsLn
		m.wsLn = nil
		m.wg.Go(func() { m.httpSrv.Serve(ln) })
		if h.Announce != nil {
			h.Announce(Name+"-ws", ln.Addr())
		}
	}
	return nil
}

// serveWS upgrades a request to a WebSocket carrying MQTT in binary
// frames [MQTT-6.0.0-1..4].
func serveWS(srv *mqttserver.Server, w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mqtt", "mqttv3.1"}, InsecureSkipVerify: true})
	if err != nil {
		return
	}
	if c.Subprotocol() == "" {
		c.Close(websocket.StatusProtocolError, "the subprotocol must be mqtt")
		return
	}
	c.SetReadLimit(-1) // the MQTT decoder bounds packets
	nc := websocket.NetConn(context.Background(), c, websocket.MessageBinary)
	srv.ServeConn(wsConn{nc, r.RemoteAddr})
}

// wsConn reports the client's address (NetConn's is a placeholder).
type wsConn struct {
	net.Conn
	remote string
}

func (c wsConn) RemoteAddr() net.Addr {
	a, err := net.ResolveTCPAddr("tcp", c.remote)
	if err != nil {
		return c.Conn.RemoteAddr()
	}
	return a
}

// Stop disconnects the clients and stops the listeners.
func (m *Module) Stop(ctx context.Context) error {
	m.live.Store(nil)
	var errs []error
	if m.httpSrv != nil {
		errs = append(errs, ignoreClosed(m.httpSrv.Close()))
	}
	if m.srv != nil {
		errs = append(errs, ignoreClosed(m.srv.Close()))
	}
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

func ignoreClosed(err error) error {
	if errors.Is(err, mqttserver.ErrClosed) || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Cleanup closes listeners bound but never served.
func (m *Module) Cleanup() error {
	for _, ln := range []*net.Listener{&m.wsLn, &m.tlsLn} {
		if *ln != nil {
			(*ln).Close()
			*ln = nil
		}
	}
	return nil
}

func registerMetrics(reg prometheus.Registerer, srv *mqttserver.Server) {
	stat := func(f func(mqttserver.Stats) int64) func() float64 {
		return func() float64 { return float64(f(srv.Stats())) }
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_mqtt_connections", Help: "Open MQTT connections."}, stat(func(s mqttserver.Stats) int64 { return s.Connections })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_mqtt_sessions", Help: "MQTT sessions held, connected or not."}, stat(func(s mqttserver.Stats) int64 { return s.Sessions })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_mqtt_subscriptions", Help: "MQTT subscriptions."}, stat(func(s mqttserver.Stats) int64 { return s.Subscriptions })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_mqtt_retained_messages", Help: "Retained MQTT messages."}, stat(func(s mqttserver.Stats) int64 { return s.Retained })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "karman_mqtt_messages_in_total", Help: "MQTT PUBLISH packets received and stored."}, stat(func(s mqttserver.Stats) int64 { return s.MessagesIn })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "karman_mqtt_messages_out_total", Help: "MQTT PUBLISH packets sent."}, stat(func(s mqttserver.Stats) int64 { return s.MessagesOut })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "karman_mqtt_dropped_qos0_total", Help: "QoS 0 messages skipped for subscribers too slow to take them."}, stat(func(s mqttserver.Stats) int64 { return s.DroppedQoS0 })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "karman_mqtt_packet_memory_bytes", Help: "Bytes of large MQTT packets held (--mqtt-max-packet-memory)."}, stat(func(s mqttserver.Stats) int64 { return s.PacketMemory })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "karman_mqtt_refused_connects_total", Help: "MQTT CONNECTs refused."}, stat(func(s mqttserver.Stats) int64 { return s.RefusedConnects })),
	} {
		reg.Register(c)
	}
}
