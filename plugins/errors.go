package plugins

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	// ErrSpec: a plugin spec that does not parse.
	ErrSpec = errors.New("plugins: bad plugin spec")
	// ErrNotFound: the plugin's program does not exist or cannot be run.
	ErrNotFound = errors.New("plugins: plugin program not found")
	// ErrChecksum: the program's SHA-256 is not the one the spec pins.
	ErrChecksum = errors.New("plugins: plugin checksum mismatch")
	// ErrHandshake: the program is not a Karman plugin, or speaks
	// another protocol version.
	ErrHandshake = errors.New("plugins: plugin handshake failed")
	// ErrStart: the plugin did not start or refused its configuration.
	ErrStart = errors.New("plugins: plugin did not start")
	// ErrCallFailed: a call of a plugin failed (error, deadline, dead
	// process) and the policy is to fail the batch.
	ErrCallFailed = errors.New("plugins: plugin call failed")
	// ErrUnavailable: the plugin's process is down (being restarted).
	// Errors matching it match ErrCallFailed too.
	ErrUnavailable = errors.New("plugins: plugin unavailable")
	// ErrClosed: the plugin was closed.
	ErrClosed = errors.New("plugins: plugin closed")
)
