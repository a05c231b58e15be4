package broker

import (
	"strings"
	"testing"

	"github.com/karmanmq/karman/server/config"
)

func TestModuleValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(c *Config)
		err  string
	}{
		{"defaults", func(*Config) {}, ""},
		{"inflight below a frame", func(c *Config) { c.MaxInflightBytes = 1 << 20 }, "--broker-max-inflight-bytes 1MiB is below the largest frame"},
		{"advertise not IPv4", func(c *Config) { c.AdvertiseAddr = "[::1]:10911" }, "--broker-advertise-addr"},
		{"advertise ok", func(c *Config) { c.AdvertiseAddr = "10.0.0.1:10911" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			tc.mod(&m.Config)
			err := m.Validate()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Validate: %v, want %q", err, tc.err)
			}
		})
	}
	if New().Config.MaxInflightBytes != config.ByteSize(256<<20) {
		t.Errorf("default max in-flight bytes %s", New().Config.MaxInflightBytes)
	}
}
