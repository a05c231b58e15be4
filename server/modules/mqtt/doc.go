// Package mqtt is the server module frontend.mqtt: the MQTT 3.1.1 and
// 5.0 front-end (protocol/mqtt). Importing it (blank) registers the
// module with server.Default. It serves MQTT over TCP on --mqtt-addr
// (default :1883), over WebSocket on --mqtt-ws-addr (default :8083, path
// /mqtt, subprotocol mqtt) and over TLS on --mqtt-tls-addr (default
// :8883, with --mqtt-tls-cert/--mqtt-tls-key or a self-signed
// certificate); "off" disables each. With --mqtt-tls-client-ca the TLS
// listener asks clients for a certificate and verifies one given against
// those CAs; with --auth, a client whose certificate verified is the
// user named by its subject's common name, with no password (a username,
// if sent, must be that name). Clients without a certificate still
// connect, and authenticate with username and password. It installs the MQTT router in the
// engine's options (engine.Options.Router) and binds its WebSocket and
// TLS listeners before the engine opens, so a taken port fails before any
// data is touched.
package mqtt
