package server

// startBackground starts the server's background loops. Each RPC file that
// needs one adds it here.
func (s *Server) startBackground() {
	s.goBackground(s.renewLoop)  // receipts of auto_renew receives (renew.go)
	s.goBackground(s.expireLoop) // clients that stopped heartbeating (heartbeat.go)
}
