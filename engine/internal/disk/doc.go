// Package disk watches the file system that holds the engine's data and
// says which writes it can take.
//
// A Monitor moves between four states, from best to worst:
//
//	OK       every write accepted
//	Full     used ≥ FullRatio (0.90): messages refused, metadata written
//	NoSpace  free < Reserve, or a write failed with ENOSPC/EDQUOT:
//	         every write refused
//	Failed   a write or sync failed with EIO: writes refused until restart
//
// It reads the free space with statfs every Interval and at once after a
// write reports ENOSPC, and leaves Full and NoSpace by itself when space
// returns (NoSpace only once twice the reserve is free, so that a disk at
// the edge does not flap). Failed is left only by a restart: Linux drops
// the dirty pages of a failed write-back, so a retried sync would claim
// data is on disk that is not.
//
// Writers ask Refuse before writing. Code that must not fail a write it
// has already begun (pebble's log, see package kv) waits with WaitSpace
// and tries again.
//
// A Monitor is safe for concurrent use. It logs one ERROR line when writes
// start to be refused and one INFO line when they are accepted again.
package disk
