package convert

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"sync"

	"github.com/karmanmq/karman/engine/message"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxInflatedBody bounds the body Deliver inflates from a compressed
// record; a body that would inflate to more is delivered as stored.
const MaxInflatedBody = 64 << 20

var errTooLarge = errors.New("convert: body inflates to more than MaxInflatedBody")

// inflate returns the uncompressed body of a compressed record, or body
// itself when it cannot: an unknown codec, corrupt data, or more than
// MaxInflatedBody bytes. The codec is the record's compression type:
// RocketMQ's Java clients write zlib streams, LZ4 frames or zstd frames;
// a record with no type (the Go client's, Java 4.x's) is zlib.
func inflate(sysFlag int32, body []byte) []byte {
	var out []byte
	var err error
	switch sysFlag & message.SysFlagCompressionMask {
	case 0, message.SysFlagCompressionZlib:
		out, err = inflateZlib(body)
	case message.SysFlagCompressionLZ4:
		out, err = inflateLZ4(body)
	case message.SysFlagCompressionZstd:
		out, err = inflateZstd(body)
	default:
		return body
	}
	if err != nil {
		return body
	}
	return out
}

// zlibReaders and lz4Readers recycle readers, which allocate tens of KiB
// (zlib) or a block buffer (LZ4) each.
var zlibReaders, lz4Readers sync.Pool

func inflateZlib(body []byte) ([]byte, error) {
	src := bytes.NewReader(body)
	r, ok := zlibReaders.Get().(io.ReadCloser)
	if ok {
		if err := r.(zlib.Resetter).Reset(src, nil); err != nil {
			zlibReaders.Put(r)
			return nil, err
		}
	} else {
		var err error
		if r, err = zlib.NewReader(src); err != nil {
			return nil, err
		}
	}
	defer zlibReaders.Put(r)
	return readBounded(r, len(body))
}

func inflateLZ4(body []byte) ([]byte, error) {
	src := bytes.NewReader(body)
	r, ok := lz4Readers.Get().(*lz4.Reader)
	if ok {
		r.Reset(src)
	} else {
		r = lz4.NewReader(src)
	}
	defer lz4Readers.Put(r)
	return readBounded(r, len(body))
}

// readBounded reads r to its end, failing past MaxInflatedBody bytes.
func readBounded(r io.Reader, compressed int) ([]byte, error) {
	out := bytes.NewBuffer(make([]byte, 0, min(4*compressed+512, MaxInflatedBody+1)))
	n, err := io.Copy(out, io.LimitReader(r, MaxInflatedBody+1))
	if err != nil {
		return nil, err
	}
	if n > MaxInflatedBody {
		return nil, errTooLarge
	}
	return out.Bytes(), nil
}

// zstdDecoder decodes whole zstd bodies; DecodeAll may be called
// concurrently. It is built on first use.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxInflatedBody),
		zstd.WithDecoderLowmem(true))
})

func inflateZstd(body []byte) ([]byte, error) {
	d, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	return d.DecodeAll(body, make([]byte, 0, min(4*len(body)+512, MaxInflatedBody)))
}
