//go:build !linux

package commitlog

// prefaultLoop does nothing where pages cannot be populated ahead of time.
func (l *Log) prefaultLoop() { l.background.Done() }
