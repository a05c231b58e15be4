package transport

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
)

// Header names and values of the gRPC over HTTP/2 protocol.
const (
	contentTypeGRPC = "application/grpc"
	headerTimeout   = "grpc-timeout"
	headerEncoding  = "grpc-encoding"
	headerStatus    = "grpc-status"
	headerMessage   = "grpc-message"
	headerDetails   = "grpc-status-details-bin"
)

// request is what a call's HEADERS say.
type request struct {
	method      string // :method
	path        string // :path, "/package.Service/Method"
	contentType string
	encoding    string        // grpc-encoding
	timeout     time.Duration // grpc-timeout; 0: none
	md          metadata.MD   // every other header, "-bin" values decoded
	// contentLength is the content-length header, -1 when absent.
	contentLength int64
	// grpcErr is what gRPC finds wrong in a well-formed request: a
	// grpc-timeout or "-bin" value it cannot read.
	grpcErr error
	pseudo  uint8 // the pseudo-headers seen, pseudo* bits
}

// Bits of request.pseudo.
const (
	pseudoMethod = 1 << iota
	pseudoScheme
	pseudoPath
	pseudoAuthority
)

// reservedHeader reports whether a header is the transport's own and so
// not part of the call's metadata.
func reservedHeader(name string) bool {
	switch name {
	case "content-type", "te", "user-agent", "grpc-timeout", "grpc-encoding",
		"grpc-accept-encoding", "grpc-message-type", "content-length":
		return true
	}
	return false
}

// connectionHeader reports whether name is a connection-specific header,
// which HTTP/2 forbids (RFC 9113, section 8.2.2).
func connectionHeader(name string) bool {
	switch name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// setHeader records one request header into r. An error means the
// request is malformed in HTTP/2's terms (RFC 9113, section 8.1.1); what
// gRPC alone finds wrong is left in r.grpcErr.
func (r *request) setHeader(name, value string) error {
	switch name {
	case ":method":
		r.method = value
		return r.sawPseudo(pseudoMethod, name)
	case ":path":
		if value == "" {
			return errors.New("empty :path")
		}
		r.path = value
		return r.sawPseudo(pseudoPath, name)
	case ":scheme":
		return r.sawPseudo(pseudoScheme, name)
	case ":authority":
		return r.sawPseudo(pseudoAuthority, name)
	case "content-type":
		r.contentType = value
	case "te":
		if value != "trailers" {
			return fmt.Errorf("te %q: HTTP/2 allows only \"trailers\"", value)
		}
	case "content-length":
		n, err := strconv.ParseUint(value, 10, 63)
		if err != nil || r.contentLength >= 0 && int64(n) != r.contentLength {
			return fmt.Errorf("bad content-length %q", value)
		}
		r.contentLength = int64(n)
	case headerEncoding:
		r.encoding = value
	case headerTimeout:
		d, err := parseTimeout(value)
		if err != nil {
			r.setGRPCErr(err)
			return nil
		}
		r.timeout = d
	default:
		if strings.HasPrefix(name, ":") {
			return fmt.Errorf("unknown pseudo-header %q", name)
		}
		if connectionHeader(name) {
			return fmt.Errorf("connection-specific header %q", name)
		}
		if reservedHeader(name) {
			if name == "user-agent" {
				r.addMD(name, value)
			}
			return nil
		}
		if strings.HasSuffix(name, "-bin") {
			b, err := decodeBinHeader(value)
			if err != nil {
				r.setGRPCErr(fmt.Errorf("header %s: %w", name, err))
				return nil
			}
			value = string(b)
		}
		r.addMD(name, value)
	}
	return nil
}

// sawPseudo notes a pseudo-header, which may appear once.
func (r *request) sawPseudo(bit uint8, name string) error {
	if r.pseudo&bit != 0 {
		return fmt.Errorf("pseudo-header %s repeated", name)
	}
	r.pseudo |= bit
	return nil
}

func (r *request) setGRPCErr(err error) {
	if r.grpcErr == nil {
		r.grpcErr = err
	}
}

// complete reports what a request lacks once all its headers are in:
// every request but CONNECT has :method, :scheme and :path.
func (r *request) complete() error {
	const need = pseudoMethod | pseudoScheme | pseudoPath
	if r.pseudo&pseudoMethod != 0 && r.method == "CONNECT" {
		return nil
	}
	if r.pseudo&need != need {
		return errors.New("a request needs :method, :scheme and :path")
	}
	return nil
}

func (r *request) addMD(name, value string) {
	if r.md == nil {
		r.md = make(metadata.MD, 8)
	}
	r.md[name] = append(r.md[name], value)
}

// isGRPCContentType reports whether ct is gRPC's: "application/grpc",
// optionally followed by "+codec" or ";parameters".
func isGRPCContentType(ct string) bool {
	rest, ok := strings.CutPrefix(ct, contentTypeGRPC)
	return ok && (rest == "" || rest[0] == '+' || rest[0] == ';')
}

// parseTimeout decodes a grpc-timeout value: at most 8 digits and a unit.
func parseTimeout(s string) (time.Duration, error) {
	if len(s) < 2 || len(s) > 9 {
		return 0, fmt.Errorf("bad grpc-timeout %q", s)
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad grpc-timeout %q", s)
	}
	var unit time.Duration
	switch s[len(s)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, fmt.Errorf("bad grpc-timeout unit in %q", s)
	}
	const maxDuration = time.Duration(1<<63 - 1)
	if n > uint64(maxDuration/unit) {
		return maxDuration, nil
	}
	return time.Duration(n) * unit, nil
}

// decodeBinHeader decodes a "-bin" header value, base64 with or without
// padding.
func decodeBinHeader(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// encodeBinHeader encodes a "-bin" header value.
func encodeBinHeader(v string) string { return base64.RawStdEncoding.EncodeToString([]byte(v)) }

// encodeGRPCMessage percent-encodes a status message as grpc-message
// requires: every byte outside printable ASCII, and '%'.
func encodeGRPCMessage(msg string) string {
	clean := true
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c < 0x20 || c > 0x7e || c == '%' {
			clean = false
			break
		}
	}
	if clean {
		return msg
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(msg) + 16)
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
