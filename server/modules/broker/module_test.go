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

func TestReplicaID(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured int64
		addr       string
		want       int64 // 0: derived, checked below
	}{
		{"configured", 3, "10.0.0.1:10911", 3},
		{"derived", 0, "10.0.0.1:10911", 0},
		{"negative is derived", -1, "10.0.0.2:10911", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ReplicaID(tc.configured, tc.addr)
			if tc.want != 0 && got != tc.want {
				t.Fatalf("ReplicaID(%d, %q) = %d, want %d", tc.configured, tc.addr, got, tc.want)
			}
			if got < 1 || got > maxDerivedID {
				t.Fatalf("ReplicaID(%d, %q) = %d, outside 1..%d", tc.configured, tc.addr, got, maxDerivedID)
			}
			if again := ReplicaID(tc.configured, tc.addr); again != got {
				t.Fatalf("ReplicaID is not stable: %d then %d", got, again)
			}
		})
	}
	// Replicas of one group on one host, or on the usual port of several
	// hosts, get distinct ids.
	seen := map[int64]string{}
	for _, a := range []string{"127.0.0.1:10911", "127.0.0.1:10921", "127.0.0.1:10931", "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"} {
		id := ReplicaID(0, a)
		if other, dup := seen[id]; dup {
			t.Fatalf("%s and %s share the derived id %d", a, other, id)
		}
		seen[id] = a
	}
}
