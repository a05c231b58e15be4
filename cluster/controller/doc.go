// Package controller is the controller quorum of RocketMQ's controller
// mode (RIP-44): three or five nodes replicating, through hashicorp/raft
// (log and stable store: package raftstore; snapshots: files; transport:
// TCP), one record per broker group:
//
//   - its members (broker id ≥ 1, address, HA address) and cluster;
//   - its master (0: none) and the master's epoch;
//   - its in-sync set (SyncStateSet) and that set's epoch.
//
// Commands, each one raft entry applied by every node alike:
//
//   - register: records a broker; the first broker of a group that never
//     had a master becomes its master at epoch 1. A broker naming another
//     cluster than its group's is refused (ErrMismatch).
//   - alter the in-sync set: only the master of the current epoch may
//     (ErrFenced otherwise); the set must hold the master and registered
//     brokers only.
//   - elect: the leader ranks the live brokers (highest heartbeat epoch,
//     then longest log, then lowest id) and the state machine takes the
//     first one in the in-sync set (any live one with
//     Options.AllowUncleanElection). The winner's set becomes {winner}
//     and both epochs go up by one. No candidate: nothing changes
//     (ErrNoCandidate).
//   - peers: a node that starts to lead writes the peer list it was
//     started with. Raft does not compare lists (each node bootstraps
//     from its own), so every node compares this one with its own; a
//     node whose list differs logs it, shows it in its status
//     (peersMismatch) and refuses brokers' requests with ErrPeers until
//     it is restarted with the quorum's list. A restart with another
//     list than the stored configuration is refused at Open (ErrPeers).
//
// Heartbeats are not replicated: the leader keeps them in memory, and a
// new leader counts every broker as seen at the moment it took over. The
// leader checks the masters several times per Options.HeartbeatTimeout
// and elects a new master for a group whose master stayed silent longer.
// A broker learns its role from the answer to its heartbeat: its group's
// record.
//
// Brokers speak to the quorum over HTTP/JSON (see Controller.Handler and
// Client); only the leader answers writes and heartbeats, after applying
// every entry of earlier terms, and the others answer ErrNotLeader so the
// client tries the next address.
package controller
