package config

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/spf13/pflag"
)

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		err  bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"4096B", 4096, false},
		{"64k", 64 << 10, false},
		{"64KiB", 64 << 10, false},
		{"64KB", 64 << 10, false},
		{"128MiB", 128 << 20, false},
		{"128m", 128 << 20, false},
		{" 1GiB ", 1 << 30, false},
		{"1G", 1 << 30, false},
		{"2TiB", 2 << 40, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"-1", 0, true},
		{"1.5GiB", 0, true},
		{"12XB", 0, true},
		{"1iB", 0, true},
		{"ten", 0, true},
		{"99999999999TiB", 0, true},
	} {
		got, err := ParseByteSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, error %t", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for _, tc := range []struct {
		in   ByteSize
		want string
	}{
		{0, "0"}, {1000, "1000"}, {1024, "1KiB"}, {1536, "1536"}, {64 << 20, "64MiB"}, {1 << 30, "1GiB"}, {3 << 40, "3TiB"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("ByteSize(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
		if back, err := ParseByteSize(tc.in.String()); err != nil || back != tc.in {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tc.in.String(), back, err, int64(tc.in))
		}
	}
}

var fronts = []Listener{
	{Name: "remoting", DefaultAddr: ":10911", MaxMessageSize: 16 << 20},
	{Name: "other", DefaultAddr: ":1"},
}

// load binds a config, parses args, then applies environ, as serve does.
func load(t *testing.T, args, environ []string) (*Config, *pflag.FlagSet, error) {
	c, fs, _, err := loadWarn(t, args, environ)
	return c, fs, err
}

// loadWarn is load that also returns ApplyEnv's warnings.
func loadWarn(t *testing.T, args, environ []string) (*Config, *pflag.FlagSet, []string, error) {
	t.Helper()
	var c Config
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.Bind(fs, fronts)
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	warnings, err := ApplyEnv(fs, environ)
	return &c, fs, warnings, err
}

func TestDefaults(t *testing.T) {
	c, _, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Data != DefaultData || c.Addrs[HTTP] != DefaultHTTPAddr || c.Addrs["remoting"] != ":10911" ||
		c.Flush != engine.FlushAsync || c.SegmentSize != engine.DefaultSegmentSize || !c.AutoCreateTopics ||
		c.DefaultQueues != engine.DefaultQueueCount || c.RetentionAge != engine.DefaultRetentionAge {
		t.Errorf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestPrecedence(t *testing.T) {
	environ := []string{
		"PATH=/bin",
		"KARMAN_DATA=/from/env",
		"KARMAN_HTTP_ADDR=:9090",
		"KARMAN_SEGMENT_SIZE=128MiB",
		"KARMAN_FLUSH=sync",
		"KARMAN_AUTO_CREATE_TOPICS=false",
		"KARMAN_REMOTING_ADDR=off",
	}
	c, _, err := load(t, []string{"--data", "/from/flag", "--segment-size", "64MiB"}, environ)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"data: flag over env", c.Data, "/from/flag"},
		{"segment-size: flag over env", c.SegmentSize, ByteSize(64 << 20)},
		{"http-addr: env over default", c.Addrs[HTTP], ":9090"},
		{"flush: env over default", c.Flush, engine.FlushSync},
		{"auto-create-topics: env over default", c.AutoCreateTopics, false},
		{"max-message-size: default", c.MaxMessageSize, ByteSize(engine.DefaultMaxMessageSize)},
		{"retention-age: default", c.RetentionAge, 72 * time.Hour},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if _, on := c.Addr("remoting"); on {
		t.Error(`remoting-addr "off" left the listener enabled`)
	}
	if a, on := c.Addr(HTTP); !on || a != ":9090" {
		t.Errorf("Addr(http) = %q, %t", a, on)
	}
}

// TestUnknownEnv checks that variables naming no flag are ignored with a
// warning, with the nearest flag for a typo, and that Kubernetes service
// links and the client commands' credentials pass without one.
func TestUnknownEnv(t *testing.T) {
	environ := []string{
		"KARMAN_DATA=/x",
		"KARMAN_HTTP_ADR=:1",
		"KARMAN_SEGMENT_SIZ=64MiB",
		"KARMAN_BIN=/usr/local/bin/karman",
		"KARMAN_PORT=tcp://10.0.0.7:9876",
		"KARMAN_PORT_9876_TCP=tcp://10.0.0.7:9876",
		"KARMAN_PORT_9876_TCP_ADDR=10.0.0.7",
		"KARMAN_PORT_9876_TCP_PORT=9876",
		"KARMAN_PORT_9876_TCP_PROTO=tcp",
		"KARMAN_SERVICE_HOST=10.0.0.7",
		"KARMAN_SERVICE_PORT=9876",
		"KARMAN_SERVICE_PORT_NAMESRV=9876",
		"KARMAN_ACCESS_KEY=admin",
		"KARMAN_SECRET_KEY=s3cret-admin",
	}
	c, _, warnings, err := loadWarn(t, nil, environ)
	if err != nil {
		t.Fatalf("unknown variables refused: %v", err)
	}
	if c.Data != "/x" {
		t.Errorf("KARMAN_DATA not applied beside unknown variables: %q", c.Data)
	}
	want := []string{
		"environment variable KARMAN_BIN names no flag and is ignored",
		"environment variable KARMAN_HTTP_ADR names no flag and is ignored; did you mean KARMAN_HTTP_ADDR (--http-addr)?",
		"environment variable KARMAN_SEGMENT_SIZ names no flag and is ignored; did you mean KARMAN_SEGMENT_SIZE (--segment-size)?",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestBadEnvValue(t *testing.T) {
	_, _, err := load(t, nil, []string{"KARMAN_SEGMENT_SIZE=lots"})
	if err == nil || !strings.Contains(err.Error(), "KARMAN_SEGMENT_SIZE") {
		t.Fatalf("bad value: error %v, want one naming KARMAN_SEGMENT_SIZE", err)
	}
	_, _, err = load(t, nil, []string{"KARMAN_FLUSH=sometimes"})
	if err == nil || !strings.Contains(err.Error(), "KARMAN_FLUSH") {
		t.Fatalf("bad value: error %v, want one naming KARMAN_FLUSH", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-addr", "8080"}, "http-addr"},
		{[]string{"--data", ""}, "data"},
		{[]string{"--segment-size", "1KiB"}, "--segment-size 1KiB must be a multiple of 4KiB between 64KiB and 4GiB"},
		{[]string{"--segment-size", "0"}, "--segment-size 0 must be"},
		{[]string{"--segment-size", "100GiB"}, "--segment-size 100GiB must be"},
		{[]string{"--segment-size", "1000000"}, "--segment-size 1000000 must be a multiple of 4KiB"},
		{[]string{"--max-message-size", "0"}, "--max-message-size 0 must be positive"},
		{[]string{"--max-message-size", "4GiB", "--segment-size", "4GiB", "--remoting-addr", "off"}, "max message size"},
		{[]string{"--default-queues", "0"}, "--default-queues 0 must be between 1 and"},
		{[]string{"--default-queues", "100000"}, "--default-queues 100000 must be between 1 and"},
		{[]string{"--retention-disk-ratio", "0"}, "--retention-disk-ratio 0 must be above 0 and at most 1"},
		{[]string{"--retention-disk-ratio", "2"}, "--retention-disk-ratio 2 must be"},
		{[]string{"--retention-disk-ratio", "NaN"}, "--retention-disk-ratio NaN must be"},
		{[]string{"--shutdown-timeout", "0s"}, "--shutdown-timeout 0s must be positive"},
		{[]string{"--flush-interval", "0s"}, "--flush-interval 0s must be positive"},
		{[]string{"--retention-age", "0s"}, "--retention-age 0s must be positive"},
		{[]string{"--retention-interval", "-1s"}, "--retention-interval -1s must be positive"},
		{[]string{"--timer-horizon", "0s"}, "--timer-horizon"},
		{[]string{"--transaction-timeout", "0s"}, "--transaction-timeout"},
		{[]string{"--transaction-check-interval", "0s"}, "--transaction-check-interval"},
		{[]string{"--disk-full-ratio", "0"}, "--disk-full-ratio 0 must be above 0 and at most 1"},
		{[]string{"--disk-full-ratio", "1.5"}, "--disk-full-ratio 1.5 must be"},
		{[]string{"--disk-reserve", "0"}, "--disk-reserve 0 must be positive"},
		{[]string{"--disk-check-interval", "0s"}, "--disk-check-interval 0s must be positive"},
		{[]string{"--transaction-check-max", "0"}, "--transaction-check-max 0 must be at least 1"},
		{[]string{"--max-message-size", "20MiB"}, "--max-message-size 20MiB is more than the remoting front-end can carry (16MiB); lower it, or turn the front-end off with --remoting-addr off"},
	} {
		c, _, err := load(t, tc.args, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Validate() = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestValidateMessageSizeLimit checks that a front-end's body limit binds
// only while the front-end is enabled.
func TestValidateMessageSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--max-message-size", "16MiB"}, true},
		{[]string{"--max-message-size", "17MiB"}, false},
		{[]string{"--max-message-size", "64MiB", "--remoting-addr", "off"}, true},
		{[]string{"--max-message-size", "64MiB", "--remoting-addr", "OFF"}, true},
	} {
		c, _, err := load(t, tc.args, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%v: Validate() = %v, want ok %t", tc.args, err, tc.ok)
		}
	}
}

func TestPrint(t *testing.T) {
	_, fs, err := load(t, []string{"--segment-size", "64MiB", "--http-addr", "off"}, []string{"KARMAN_DATA=/srv/karman"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Print(&b, fs, "json"); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	want := map[string]any{
		"data":               "/srv/karman",
		"segment-size":       float64(64 << 20),
		"http-addr":          "off",
		"remoting-addr":      ":10911",
		"auto-create-topics": true,
		"default-queues":     float64(8),
		"flush":              "async",
		"retention-age":      "72h0m0s",
		"log-level":          "info",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("json %s = %#v, want %#v", k, got[k], v)
		}
	}

	b.Reset()
	if err := Print(&b, fs, "kv"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"data=/srv/karman\n", "segment-size=64MiB\n", "http-addr=off\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("kv output lacks %q:\n%s", line, b.String())
		}
	}
	if err := Print(&b, fs, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("retention-disk-ratio"); got != "KARMAN_RETENTION_DISK_RATIO" {
		t.Errorf("EnvName = %q", got)
	}
}

// TestPrintRedactsSecrets: a flag marked secret prints as Redacted when
// set, in both formats, and as itself when empty.
func TestPrintRedactsSecrets(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("x-secret", "", "")
	fs.String("x-user", "", "")
	MarkSecret(fs, "x-secret")
	for _, format := range []string{"json", "kv"} {
		var out bytes.Buffer
		if err := Print(&out, fs, format); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), Redacted) {
			t.Errorf("%s: an empty secret is redacted:\n%s", format, out.String())
		}
	}
	if err := fs.Parse([]string{"--x-secret", "hunter22", "--x-user", "u"}); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "kv"} {
		var out bytes.Buffer
		if err := Print(&out, fs, format); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "hunter22") || !strings.Contains(out.String(), Redacted) || !strings.Contains(out.String(), "u") {
			t.Errorf("%s:\n%s", format, out.String())
		}
	}
}
