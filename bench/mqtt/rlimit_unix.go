//go:build unix

package mqtt

import "syscall"

// RaiseFileLimit raises this process's open-file limit to its hard limit,
// which child processes (idle workers, a peer broker) inherit. It returns
// the limit in force.
func RaiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	return l.Cur, nil
}
