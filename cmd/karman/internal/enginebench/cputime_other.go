//go:build !unix

package enginebench

import "time"

// cpuTime returns 0: the process's CPU time is only read on Unix systems.
func cpuTime() time.Duration { return 0 }
