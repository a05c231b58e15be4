package transport

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// headerBlock assembles a header block from HEADERS and CONTINUATION
// frames and decodes it straight into a request, field by field, without
// building a list of fields first. Every block must be decoded, even that
// of a call that will be refused, to keep HPACK's table in step with the
// client's. The reader alone uses it.
type headerBlock struct {
	dec      *hpack.Decoder
	maxList  uint32
	frag     []byte // fragments so far when the block spans frames
	frames   int    // HEADERS and CONTINUATION frames of the block so far
	streamID uint32
	end      bool // the HEADERS frame ended the stream
	selfDep  bool // the HEADERS frame made the stream depend on itself

	// The block being decoded.
	req        *request
	size       uint32 // of the fields so far, as RFC 9113 counts them
	truncated  bool   // larger than maxList: the rest was skipped
	malformed  error  // why the request is malformed (RFC 9113, section 8.1.1)
	sawRegular bool
}

func newHeaderBlock(maxList uint32) *headerBlock {
	h := &headerBlock{maxList: maxList}
	h.dec = hpack.NewDecoder(4096, h.field)
	h.dec.SetMaxStringLength(int(maxList))
	return h
}

// errHeaderBlockTooLarge ends a connection whose client sends a header
// block far beyond the advertised limit, or in too many frames.
var errHeaderBlockTooLarge = errors.New("header block far larger than SETTINGS_MAX_HEADER_LIST_SIZE, or in too many CONTINUATION frames")

// maxBlock is the most a header block may take, encoded, before the
// connection ends: twice the decoded limit (HPACK rarely inflates less)
// and a frame to spare.
func (h *headerBlock) maxBlock() int { return 2*int(h.maxList) + 16<<10 }

// maxFrames is the most frames a header block may span. Clients fill
// each frame but the last, so this leaves room for fragments of 4 KiB
// and a few more, and ends a flood of tiny or empty CONTINUATION frames
// (which add nothing to the block's size) after a bounded amount of work.
func (h *headerBlock) maxFrames() int { return 16 + h.maxBlock()/4096 }

// add takes a HEADERS or CONTINUATION frame's fragment; done reports a
// complete block, decoded into req.
func (h *headerBlock) add(f http2.Frame, req *request) (done bool, err error) {
	var frag []byte
	var ended bool
	switch f := f.(type) {
	case *http2.HeadersFrame:
		h.streamID, h.end, h.frag, h.frames = f.StreamID, f.StreamEnded(), h.frag[:0], 0
		h.selfDep = f.HasPriority() && f.Priority.StreamDep == f.StreamID
		frag, ended = f.HeaderBlockFragment(), f.HeadersEnded()
	case *http2.ContinuationFrame:
		frag, ended = f.HeaderBlockFragment(), f.HeadersEnded()
	}
	h.frames++
	if ended && len(h.frag) == 0 {
		return true, h.decode(frag, req) // the usual case: one frame
	}
	h.frag = append(h.frag, frag...)
	if len(h.frag) > h.maxBlock() || h.frames > h.maxFrames() {
		h.frag = nil
		return false, errHeaderBlockTooLarge
	}
	if !ended {
		return false, nil
	}
	err = h.decode(h.frag, req)
	if cap(h.frag) > 64<<10 {
		h.frag = nil
	}
	return true, err
}

// decode decodes a whole block into req. An error is HPACK's: the
// connection cannot go on.
func (h *headerBlock) decode(block []byte, req *request) error {
	*req = request{contentLength: -1}
	h.req, h.size, h.truncated, h.malformed, h.sawRegular = req, 0, false, nil, false
	h.dec.SetEmitEnabled(true)
	if _, err := h.dec.Write(block); err != nil {
		return err
	}
	if err := h.dec.Close(); err != nil {
		return err
	}
	h.req = nil
	return nil
}

// field takes one decoded field.
func (h *headerBlock) field(f hpack.HeaderField) {
	if h.truncated || h.malformed != nil {
		return
	}
	h.size += f.Size()
	if h.size > h.maxList {
		h.truncated = true
		h.dec.SetEmitEnabled(false)
		return
	}
	pseudo := len(f.Name) > 0 && f.Name[0] == ':'
	switch {
	case pseudo && h.sawRegular:
		h.malformed = errors.New("pseudo-header after a regular header")
	case !pseudo && !validFieldName(f.Name):
		h.malformed = fmt.Errorf("invalid header name %q", f.Name)
	case !validFieldValue(f.Value):
		h.malformed = fmt.Errorf("invalid value of header %s", f.Name)
	default:
		h.sawRegular = h.sawRegular || !pseudo
		h.malformed = h.req.setHeader(f.Name, f.Value)
	}
	if h.malformed != nil {
		h.dec.SetEmitEnabled(false)
	}
}

// validFieldName reports whether name is a lower-case HTTP token, as
// HTTP/2 requires of regular header names.
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			continue
		}
		if c < 0x21 || c > 0x7e || c >= 'A' && c <= 'Z' || isSeparator(c) {
			return false
		}
	}
	return true
}

func isSeparator(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}':
		return true
	}
	return false
}

// validFieldValue reports whether v holds no NUL, CR or LF.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == 0 || c == '\r' || c == '\n' {
			return false
		}
	}
	return true
}
