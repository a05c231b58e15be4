package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// Checkpoint layout; see the package documentation for the diagram.
const (
	checkpointName    = "checkpoint"
	checkpointSize    = 32
	checkpointMagic   = 0x4b434b50
	checkpointVersion = 1
)

// checkpointFile is the open checkpoint file. Writes are serialized by
// Log.syncMu.
type checkpointFile struct {
	f   *os.File
	buf [checkpointSize]byte
}

func openCheckpoint(dir string) (*checkpointFile, error) {
	f, err := os.OpenFile(filepath.Join(dir, checkpointName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open checkpoint: %w", err)
	}
	return &checkpointFile{f: f}, nil
}

// checkpoint is what the checkpoint file says.
type checkpoint struct {
	offset int64 // every frame before it was durable when it was written
	clean  bool  // written by Close: nothing at or after offset was ever written
}

// flagClean marks a checkpoint written by Close.
const flagClean = 1

// read returns the checkpoint. One that is missing or unusable returns ok
// false and why.
func (c *checkpointFile) read(segSize int64) (ck checkpoint, ok bool, why string) {
	var b [checkpointSize]byte
	n, err := c.f.ReadAt(b[:], 0)
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		return ck, false, "no checkpoint"
	case n < checkpointSize:
		return ck, false, fmt.Sprintf("short checkpoint (%d bytes)", n)
	}
	return decodeCheckpoint(b[:], segSize)
}

func decodeCheckpoint(b []byte, segSize int64) (ck checkpoint, ok bool, why string) {
	le := binary.LittleEndian
	switch {
	case le.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli):
		return ck, false, "checkpoint checksum mismatch"
	case le.Uint32(b[0:]) != checkpointMagic:
		return ck, false, "bad checkpoint magic"
	case le.Uint32(b[4:]) != checkpointVersion:
		return ck, false, fmt.Sprintf("unknown checkpoint version %d", le.Uint32(b[4:]))
	case int64(le.Uint64(b[16:])) != segSize:
		return ck, false, fmt.Sprintf("checkpoint written with segment size %d", int64(le.Uint64(b[16:])))
	}
	ck.offset = int64(le.Uint64(b[8:]))
	ck.clean = le.Uint32(b[24:])&flagClean != 0
	if ck.offset < 0 || ck.offset%frameAlign != 0 {
		return ck, false, fmt.Sprintf("checkpoint offset %d is not a frame boundary", ck.offset)
	}
	return ck, true, ""
}

func encodeCheckpoint(b []byte, ck checkpoint, segSize int64) {
	le := binary.LittleEndian
	var flags uint32
	if ck.clean {
		flags |= flagClean
	}
	le.PutUint32(b[0:], checkpointMagic)
	le.PutUint32(b[4:], checkpointVersion)
	le.PutUint64(b[8:], uint64(ck.offset))
	le.PutUint64(b[16:], uint64(segSize))
	le.PutUint32(b[24:], flags)
	le.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
}

// write durably replaces the checkpoint. A write torn by a crash fails its
// CRC and makes recovery scan from the first segment.
func (c *checkpointFile) write(ck checkpoint, segSize int64) error {
	encodeCheckpoint(c.buf[:], ck, segSize)
	if _, err := c.f.WriteAt(c.buf[:], 0); err != nil {
		return fmt.Errorf("commitlog: write checkpoint: %w", err)
	}
	if err := datasync(c.f); err != nil {
		return fmt.Errorf("commitlog: sync checkpoint: %w", err)
	}
	return nil
}

func (c *checkpointFile) close() error { return c.f.Close() }
