package engine

import (
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/edsrzf/mmap-go"
	_ "golang.org/x/sys/unix"
)
