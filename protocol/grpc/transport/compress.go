package transport

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// gunzip inflates a gzip message, refusing one that inflates beyond limit.
func gunzip(data []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("inflates beyond %d bytes", limit)
	}
	return out, nil
}

// marshalStatus encodes a status with details for grpc-status-details-bin.
func marshalStatus(s *spb.Status) ([]byte, error) { return proto.Marshal(s) }
