// Package kvtest opens throwaway pebble databases for the tests of the
// engine's index packages.
package kvtest

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/karmanmq/karman/engine/internal/kv"
)

// OpenDB opens a pebble database without a write-ahead log (as the engine
// opens its index) in a temporary directory, closed when the test ends.
func OpenDB(t testing.TB) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(t.TempDir(), &pebble.Options{DisableWAL: true, Logger: kv.Logger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}
