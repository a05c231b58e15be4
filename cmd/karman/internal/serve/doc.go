// Package serve runs a karman server: the engine, the HTTP endpoint
// (/healthz, /metrics) and every registered protocol front-end.
//
// Start-up binds every listener first (so a taken port fails before any
// data is touched) and announces each bound address on the announcement
// writer as "karman: <name> listening on <addr>"; then the HTTP endpoint
// serves (health is 503 "starting"), the engine opens, the front-ends
// start, health turns 200 and "karman: ready" is announced. When the
// context is done, health turns 503 "stopping", the front-ends stop in
// reverse order, the engine closes and the HTTP server shuts down, all
// within the configured shutdown timeout.
//
// Concurrency: Run blocks for the life of the server; metrics scrapes read
// the engine under a read lock that Close waits for.
package serve
