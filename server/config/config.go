package config

import (
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/spf13/pflag"
)

// Off as a listen address disables that listener.
const Off = "off"

// HTTP is the listener name of the HTTP endpoint (health and metrics).
const HTTP = "http"

// Defaults of the settings that are not engine options.
const (
	DefaultData            = "./data"
	DefaultHTTPAddr        = ":8080"
	DefaultShutdownTimeout = 15 * time.Second
)

// Config is the effective configuration of a karman server.
type Config struct {
	// Data is the engine's data directory.
	Data string
	// LogLevel is the lowest level logged.
	LogLevel slog.Level
	// ShutdownTimeout bounds a graceful shutdown.
	ShutdownTimeout time.Duration

	// Addrs is the listen address per listener: HTTP and every listening
	// module. Off disables a listener.
	Addrs map[string]string
	// bodyLimits holds, per listener name, the largest message body its
	// protocol can carry (Listener.MaxMessageSize), for those that have a
	// limit.
	bodyLimits map[string]int64

	// Engine options.
	Flush              engine.FlushMode
	FlushInterval      time.Duration
	SegmentSize        ByteSize
	MaxMessageSize     ByteSize
	AutoCreateTopics   bool
	AutoCreateGroups   bool
	DefaultQueues      int32
	RetentionAge       time.Duration
	RetentionDiskRatio float64
	RetentionInterval  time.Duration

	DiskFullRatio     float64
	DiskReserve       ByteSize
	DiskCheckInterval time.Duration

	TimerHorizon             time.Duration
	TransactionTimeout       time.Duration
	TransactionCheckInterval time.Duration
	TransactionCheckMax      int
	EnablePropertyFilter     bool
	MessageTypeCheck         bool
}

// Listener describes the listener of a module: its name gives its flag,
// --<Name>-addr.
type Listener struct {
	Name        string
	DefaultAddr string
	// Usage is the flag's help text. Optional.
	Usage string
	// MaxMessageSize is the largest message body the listener's protocol
	// carries; zero means no limit of its own.
	MaxMessageSize int64
}

// Bind registers the configuration's flags on fs, one --<name>-addr flag
// per listener, and fills c with the defaults: BindServer, AddListener
// for each listener, then BindEngine.
func (c *Config) Bind(fs *pflag.FlagSet, listeners []Listener) {
	c.BindServer(fs)
	for _, l := range listeners {
		c.AddListener(fs, l)
	}
	c.BindEngine(fs)
}

// BindServer registers the flags of the server itself (--data,
// --log-level, --shutdown-timeout, --http-addr) on fs.
func (c *Config) BindServer(fs *pflag.FlagSet) {
	fs.StringVar(&c.Data, "data", DefaultData, "data directory")
	fs.Var(levelValue{&c.LogLevel}, "log-level", "log level: debug, info, warn or error")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", DefaultShutdownTimeout, "time allowed for a graceful shutdown")

	c.bindAddr(fs, HTTP, DefaultHTTPAddr, "HTTP listen address for /healthz and /metrics")
}

// BindEngine registers the flags of the engine's options on fs.
func (c *Config) BindEngine(fs *pflag.FlagSet) {
	c.Flush = engine.FlushAsync
	fs.Var(flushValue{&c.Flush}, "flush", "flush policy: async (acknowledge once in the mapped log) or sync (acknowledge once on disk)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", engine.DefaultFlushInterval, "how often async flush writes to disk")
	c.SegmentSize = engine.DefaultSegmentSize
	fs.Var(&c.SegmentSize, "segment-size", "commit-log segment size (bytes; KiB, MiB, GiB suffixes allowed)")
	c.MaxMessageSize = engine.DefaultMaxMessageSize
	fs.Var(&c.MaxMessageSize, "max-message-size", "largest accepted message body (bytes; KiB, MiB suffixes allowed)")
	fs.BoolVar(&c.AutoCreateTopics, "auto-create-topics", true, "create unknown topics on their first send")
	fs.BoolVar(&c.AutoCreateGroups, "auto-create-groups", true, "create unknown consumer groups when a consumer first uses them")
	fs.Int32Var(&c.DefaultQueues, "default-queues", engine.DefaultQueueCount, "queue count of auto-created topics")
	fs.DurationVar(&c.RetentionAge, "retention-age", engine.DefaultRetentionAge, "delete commit-log segments older than this")
	fs.Float64Var(&c.RetentionDiskRatio, "retention-disk-ratio", engine.DefaultDiskRatio, "delete the oldest segments, consumed or not, while the data disk is fuller than this fraction")
	fs.DurationVar(&c.RetentionInterval, "retention-interval", engine.DefaultRetentionEvery, "how often retention runs")
	fs.Float64Var(&c.DiskFullRatio, "disk-full-ratio", engine.DefaultDiskFullRatio, "refuse sends while the data disk is at least this full (consumers go on)")
	c.DiskReserve = engine.DefaultDiskReserve
	fs.Var(&c.DiskReserve, "disk-reserve", "refuse every write, offset commits and acknowledgements too, while less than this is free (bytes; KiB, MiB, GiB suffixes allowed)")
	fs.DurationVar(&c.DiskCheckInterval, "disk-check-interval", engine.DefaultDiskCheck, "how often the data disk's free space is read")
	fs.DurationVar(&c.TimerHorizon, "timer-horizon", engine.DefaultTimerHorizon, "how far ahead a delayed or timer message may be scheduled")
	fs.DurationVar(&c.TransactionTimeout, "transaction-timeout", 6*time.Second, "how long a transactional half message waits before its producer is first asked to resolve it")
	fs.DurationVar(&c.TransactionCheckInterval, "transaction-check-interval", 30*time.Second, "time between checks of an unresolved transaction")
	fs.IntVar(&c.TransactionCheckMax, "transaction-check-max", 15, "checks of an unresolved transaction before it is discarded")
	fs.BoolVar(&c.EnablePropertyFilter, "enable-property-filter", true, "accept SQL92 filter expressions (RocketMQ's enablePropertyFilter)")
	fs.BoolVar(&c.MessageTypeCheck, "message-type-check", true, "refuse messages whose type (normal, FIFO, delay, transaction) the topic is not declared for")
}

// AddListener registers the --<Name>-addr flag of l on fs. fs must not
// have it yet.
func (c *Config) AddListener(fs *pflag.FlagSet, l Listener) {
	usage := l.Usage
	if usage == "" {
		usage = l.Name + " listen address"
	}
	c.bindAddr(fs, l.Name, l.DefaultAddr, usage)
	if l.MaxMessageSize > 0 {
		if c.bodyLimits == nil {
			c.bodyLimits = map[string]int64{}
		}
		c.bodyLimits[l.Name] = l.MaxMessageSize
	}
}

func (c *Config) bindAddr(fs *pflag.FlagSet, name, def, usage string) {
	if c.Addrs == nil {
		c.Addrs = map[string]string{}
	}
	c.Addrs[name] = def
	fs.Var(addrValue{c.Addrs, name}, name+"-addr", usage+` ("off" disables it)`)
}

// Addr returns the listen address of the named listener and whether it is
// enabled.
func (c *Config) Addr(name string) (string, bool) {
	a, ok := c.Addrs[name]
	return a, ok && !strings.EqualFold(a, Off)
}

// EngineOptions converts the configuration into engine options.
func (c *Config) EngineOptions(logger *slog.Logger) *engine.Options {
	return &engine.Options{
		SegmentSize:        int64(c.SegmentSize),
		Flush:              c.Flush,
		FlushInterval:      c.FlushInterval,
		MaxMessageSize:     int(c.MaxMessageSize),
		AutoCreateTopics:   c.AutoCreateTopics,
		AutoCreateGroups:   c.AutoCreateGroups,
		DefaultQueues:      c.DefaultQueues,
		RetentionAge:       c.RetentionAge,
		RetentionDiskRatio: c.RetentionDiskRatio,
		RetentionInterval:  c.RetentionInterval,
		DiskFullRatio:      c.DiskFullRatio,
		DiskReserve:        int64(c.DiskReserve),
		DiskCheckInterval:  c.DiskCheckInterval,
		Logger:             logger,

		TimerHorizon:             c.TimerHorizon,
		TransactionTimeout:       c.TransactionTimeout,
		TransactionCheckInterval: c.TransactionCheckInterval,
		TransactionCheckMax:      c.TransactionCheckMax,
		DisableSQLFilter:         !c.EnablePropertyFilter,
		DisableMessageTypeCheck:  !c.MessageTypeCheck,
	}
}

// Validate reports the first setting that cannot work: an empty data
// directory, a malformed listen address, a size, count or duration out of
// its range (zero included: no flag takes 0 to mean its default), or a
// largest message size that an enabled front-end cannot carry. It runs
// before any listener is bound.
func (c *Config) Validate() error {
	if c.Data == "" {
		return fmt.Errorf("config: --data must not be empty")
	}
	for name, a := range c.Addrs {
		if strings.EqualFold(a, Off) {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("config: --%s-addr %q: want host:port, :port or %q: %w", name, a, Off, err)
		}
	}
	if err := c.validateRanges(); err != nil {
		return err
	}
	if err := c.validateMessageSize(); err != nil {
		return err
	}
	o := c.EngineOptions(nil).EnsureDefaults()
	if err := o.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// validateRanges checks each size, count, ratio and duration flag against
// its range.
func (c *Config) validateRanges() error {
	positive := []struct {
		flag string
		d    time.Duration
	}{
		{"shutdown-timeout", c.ShutdownTimeout},
		{"flush-interval", c.FlushInterval},
		{"retention-age", c.RetentionAge},
		{"retention-interval", c.RetentionInterval},
		{"disk-check-interval", c.DiskCheckInterval},
		{"timer-horizon", c.TimerHorizon},
		{"transaction-timeout", c.TransactionTimeout},
		{"transaction-check-interval", c.TransactionCheckInterval},
	}
	for _, p := range positive {
		if p.d <= 0 {
			return fmt.Errorf("config: --%s %s must be positive", p.flag, p.d)
		}
	}
	switch {
	case c.SegmentSize < engine.MinSegmentSize || c.SegmentSize > engine.MaxSegmentSize || c.SegmentSize%4096 != 0:
		return fmt.Errorf("config: --segment-size %s must be a multiple of 4KiB between %s and %s",
			c.SegmentSize, ByteSize(engine.MinSegmentSize), ByteSize(engine.MaxSegmentSize))
	case c.MaxMessageSize < 1:
		return fmt.Errorf("config: --max-message-size %s must be positive", c.MaxMessageSize)
	case c.DefaultQueues < 1 || c.DefaultQueues > engine.MaxQueues:
		return fmt.Errorf("config: --default-queues %d must be between 1 and %d", c.DefaultQueues, engine.MaxQueues)
	case !(c.RetentionDiskRatio > 0 && c.RetentionDiskRatio <= 1):
		return fmt.Errorf("config: --retention-disk-ratio %g must be above 0 and at most 1", c.RetentionDiskRatio)
	case !(c.DiskFullRatio > 0 && c.DiskFullRatio <= 1):
		return fmt.Errorf("config: --disk-full-ratio %g must be above 0 and at most 1", c.DiskFullRatio)
	case c.DiskReserve < 1:
		return fmt.Errorf("config: --disk-reserve %s must be positive", c.DiskReserve)
	case c.TransactionCheckMax < 1:
		return fmt.Errorf("config: --transaction-check-max %d must be at least 1", c.TransactionCheckMax)
	}
	return nil
}

// validateMessageSize checks that every enabled front-end can carry a
// message of --max-message-size.
func (c *Config) validateMessageSize() error {
	names := make([]string, 0, len(c.bodyLimits))
	for name := range c.bodyLimits {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, on := c.Addr(name); !on {
			continue
		}
		if limit := c.bodyLimits[name]; int64(c.MaxMessageSize) > limit {
			return fmt.Errorf("config: --max-message-size %s is more than the %s front-end can carry (%s); lower it, or turn the front-end off with --%s-addr %s",
				c.MaxMessageSize, name, ByteSize(limit), name, Off)
		}
	}
	return nil
}

// addrValue is a flag that writes one entry of an address map.
type addrValue struct {
	m   map[string]string
	key string
}

func (v addrValue) String() string {
	if v.m == nil {
		return ""
	}
	return v.m[v.key]
}

func (v addrValue) Set(s string) error { v.m[v.key] = strings.TrimSpace(s); return nil }
func (v addrValue) Type() string       { return "addr" }

// levelValue is a flag holding a slog level.
type levelValue struct{ l *slog.Level }

func (v levelValue) String() string {
	if v.l == nil {
		return ""
	}
	return strings.ToLower(v.l.String())
}

func (v levelValue) Set(s string) error {
	if err := v.l.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("want debug, info, warn or error")
	}
	return nil
}

func (v levelValue) Type() string { return "level" }

// flushValue is a flag holding an engine flush mode.
type flushValue struct{ m *engine.FlushMode }

func (v flushValue) String() string {
	if v.m == nil {
		return ""
	}
	return v.m.String()
}

func (v flushValue) Set(s string) error {
	m, err := engine.ParseFlushMode(s)
	if err != nil {
		return err
	}
	*v.m = m
	return nil
}

func (v flushValue) Type() string { return "flush" }
