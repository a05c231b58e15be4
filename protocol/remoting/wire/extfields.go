package wire

import (
	"bytes"
	"reflect"
	"slices"
	"strconv"
	"sync"
)

// LoadExtFields puts the fields that are not in ExtFields yet into it:
// those DecodeOptions.DeferExtFields left undecoded, or those SetHeader
// gave. It does nothing for other commands, and is not safe to call from
// several goroutines at once.
func (c *Command) LoadExtFields() {
	if h := c.hdr; h != nil {
		c.hdr = nil
		c.EncodeHeader(h)
		for _, f := range c.hdrExt {
			c.ExtFields[f.key] = f.value
		}
		c.hdrExt = nil
	}
	if c.ext == nil {
		return
	}
	if buf := c.takePairs(); buf != nil {
		c.ext = nil
		c.putExtPairs(buf.pairs[:buf.n])
		buf.release()
		return
	}
	s := jsonScanner{data: c.ext, strict: c.extStrict}
	c.ext = nil
	// The object was checked when the header was decoded.
	_ = s.readExtFields(c)
}

// takePairs returns the entries gathered when the header was decoded, if
// they are still there, and leaves their buffer to the caller.
func (c *Command) takePairs() *pairBuffer {
	buf := c.pairs
	c.pairs = nil
	return buf
}

// jsonFieldsAppender is implemented by the headers whose fields SetHeader
// can keep out of the map: appendFields writes them to w in key order.
type jsonFieldsAppender interface {
	Header
	appendFields(w *fieldWriter)
}

// SetHeader makes h's fields the command's extFields without building
// the map, for a command that is sent as is (a response a handler
// returns, a send request): AppendTo encodes them straight from h. It
// applies to the headers of send requests and of send and pull responses
// on a command without ExtFields; otherwise it is EncodeHeader. h must
// not change until the command is encoded; ExtFields stays nil until
// LoadExtFields. Given the header it already has, whose fields changed,
// the command keeps it, and the fields SetExt added besides it. SetExt
// and AppendExtValues work on such a command without building the map:
// a client signs a send request that way.
func (c *Command) SetHeader(h Header) {
	if a, ok := h.(jsonFieldsAppender); ok && c.ExtFields == nil && (c.hdr == nil || c.hdr == h) {
		c.hdr = a
		return
	}
	c.LoadExtFields()
	c.EncodeHeader(h)
}

// loadGivenHeader turns a header given with SetHeader into ExtFields, so
// that decoding reads what encoding would send.
func (c *Command) loadGivenHeader() {
	if c.hdr != nil {
		c.LoadExtFields()
	}
}

// DecodeHeader fills h from the command's extFields. Deferred extFields
// (DecodeOptions.DeferExtFields) are read in place for the headers of
// sends and pulls and of their responses, and decoded into ExtFields
// first for the others.
func (c *Command) DecodeHeader(h Header) error {
	c.loadGivenHeader()
	if c.ext != nil {
		switch h.(type) {
		case *SendMessageRequestHeader, *SendMessageRequestHeaderV2, *PullMessageRequestHeader,
			*SendMessageResponseHeader, *PullMessageResponseHeader:
			_, err := c.decodeInPlace(h, nil, false)
			return err
		}
		c.LoadExtFields()
	}
	return h.DecodeFields(c.ExtFields)
}

// pairBuffer holds the entries of an extFields object: the entries, and
// the strings among them that needed unescaping.
type pairBuffer struct {
	pairs   [maxExtFields]extPair
	n       int // entries in pairs
	scratch []byte
}

// pairBuffers recycles pairBuffers.
var pairBuffers = sync.Pool{New: func() any { return &pairBuffer{scratch: make([]byte, 0, 512)} }}

// maxScratch bounds the scratch memory a pairBuffer keeps for reuse.
const maxScratch = 16 << 10

// release hands buf back to pairBuffers. Nothing may use its entries
// afterwards.
func (buf *pairBuffer) release() {
	clear(buf.pairs[:buf.n]) // drop the references to the frame
	buf.n = 0
	if cap(buf.scratch) > maxScratch {
		buf.scratch = make([]byte, 0, 512)
	}
	buf.scratch = buf.scratch[:0]
	pairBuffers.Put(buf)
}

// gatherExtFields checks the extFields object at s.pos, as
// scanExtFields does, and keeps its entries in c.pairs when they fit.
func (s *jsonScanner) gatherExtFields(c *Command) error {
	buf := pairBuffers.Get().(*pairBuffer)
	s.scratch = &buf.scratch
	pairs, err := s.scanExtFields(buf.pairs[:0], true)
	s.scratch = nil
	buf.n = min(len(pairs), maxExtFields)
	if err != nil || len(pairs) > maxExtFields {
		// More entries than the buffer holds: they are read again
		// from the text when needed.
		buf.release()
		return err
	}
	c.pairs = buf
	return nil
}

// decodeInPlace reads h from the entries of the deferred extFields. With
// appendProps set, a send request header's properties are appended to
// props, which it returns, instead of being set as a string.
func (c *Command) decodeInPlace(h Header, props []byte, appendProps bool) ([]byte, error) {
	buf := c.takePairs()
	var pairs []extPair
	if buf != nil {
		pairs = buf.pairs[:buf.n]
	} else {
		buf = pairBuffers.Get().(*pairBuffer)
		s := jsonScanner{data: c.ext, strict: c.extStrict, scratch: &buf.scratch}
		pairs, _ = s.scanExtFields(buf.pairs[:0], true) // checked when the header was decoded
		buf.n = min(len(pairs), maxExtFields)
	}
	r := fieldReader{pairs: pairs, fromPairs: true, props: props, appendProps: appendProps}
	var err error
	switch h := h.(type) {
	case *SendMessageRequestHeader:
		err = h.decode(&r)
	case *SendMessageRequestHeaderV2:
		err = h.decode(&r)
	case *PullMessageRequestHeader:
		err = h.decode(&r)
	case *SendMessageResponseHeader:
		err = h.decode(&r)
	case *PullMessageResponseHeader:
		err = h.decode(&r)
	default:
		panic("wire: no in-place decoder for " + reflect.TypeOf(h).String())
	}
	buf.release()
	return r.props, err
}

// DecodeSendHeader decodes the header of a send request as DecodeHeader
// does, except that it appends the properties to props instead of
// setting h.Properties, which it leaves empty, and returns props: for a
// broker that copies the properties into the stored message, this saves
// making a string of them.
func (c *Command) DecodeSendHeader(h *SendMessageRequestHeader, props []byte) ([]byte, error) {
	c.loadGivenHeader()
	if c.ext != nil {
		return c.decodeInPlace(h, props, true)
	}
	err := h.DecodeFields(c.ExtFields)
	props = append(props, h.Properties...)
	h.Properties = ""
	return props, err
}

// getPair returns the value of the last entry named key, as a map built
// from the entries would hold it.
func getPair(pairs []extPair, key string) ([]byte, bool) {
	for i := len(pairs) - 1; i >= 0; i-- {
		if string(pairs[i].key) == key {
			return pairs[i].val, true
		}
	}
	return nil, false
}

// parseDec parses a base-10 integer of the given bit size with the rules
// of strconv.ParseInt, without allocating for ordinary values.
func parseDec(b []byte, bits int) (int64, bool) {
	digits := b
	neg := false
	if len(digits) > 0 && (digits[0] == '-' || digits[0] == '+') {
		neg = digits[0] == '-'
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return parseDecSlow(b, bits)
	}
	var n int64
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	if neg {
		n = -n
	}
	if bits < 64 {
		lim := int64(1) << (bits - 1)
		if n < -lim || n >= lim {
			return 0, false
		}
	}
	return n, true
}

func parseDecSlow(b []byte, bits int) (int64, bool) {
	n, err := strconv.ParseInt(string(b), 10, bits)
	return n, err == nil
}

// ExtField returns the value of the extField key, reading deferred fields
// (DecodeOptions.DeferExtFields) in place instead of loading them all
// into ExtFields; names (topics, groups, keys) read again and again do
// not allocate.
func (c *Command) ExtField(key string) string { return c.extField(key, true) }

// ExtFieldOnce is ExtField for values that differ from request to request
// (a signature): they are not kept in the cache of names.
func (c *Command) ExtFieldOnce(key string) string { return c.extField(key, false) }

func (c *Command) extField(key string, name bool) string {
	if c.hdr != nil || (c.ext != nil && c.pairs == nil) {
		c.LoadExtFields()
	}
	if c.pairs == nil {
		return c.ExtFields[key]
	}
	v, found := []byte(nil), false
	for _, e := range c.pairs.pairs[:c.pairs.n] {
		if string(e.key) == key {
			v, found = e.val, true // the last of a repeated key wins
		}
	}
	switch {
	case !found:
		return c.ExtFields[key]
	case name:
		return internName(v)
	}
	return string(v)
}

// AppendExtValues appends the values of every extField but skip, in the
// order of their keys, to dst: what RocketMQ's ACL signs before the body.
// Deferred fields are read in place, without loading them.
func (c *Command) AppendExtValues(dst []byte, skip string) []byte {
	if h, ok := c.hdr.(jsonFieldsAppender); ok && c.ExtFields == nil {
		w := fieldWriter{dst: dst, values: true, skip: skip, extra: c.hdrExt}
		h.appendFields(&w)
		return w.end()
	}
	if c.hdr != nil || (c.ext != nil && c.pairs == nil) || (c.pairs != nil && len(c.ExtFields) > 0) {
		c.LoadExtFields()
	}
	if c.pairs == nil {
		var arr [maxExtFields]string
		keys := arr[:0]
		for k := range c.ExtFields {
			if k != skip {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = append(dst, c.ExtFields[k]...)
		}
		return dst
	}
	// The Go client (encoding/json) and Karman's write the entries in key
	// order, each key once: their values are appended as they come.
	ps := c.pairs.pairs[:c.pairs.n]
	ordered := true
	for i := 1; i < len(ps) && ordered; i++ {
		ordered = bytes.Compare(ps[i-1].key, ps[i].key) < 0
	}
	if ordered {
		for _, e := range ps {
			if string(e.key) != skip {
				dst = append(dst, e.val...)
			}
		}
		return dst
	}
	var arr [maxExtFields]extPair
	pairs := arr[:0]
	for _, e := range ps {
		if string(e.key) == skip {
			continue
		}
		// A repeated key keeps its last value.
		if i := slices.IndexFunc(pairs, func(p extPair) bool { return bytes.Equal(p.key, e.key) }); i >= 0 {
			pairs[i] = e
			continue
		}
		pairs = append(pairs, e)
	}
	slices.SortFunc(pairs, func(a, b extPair) int { return bytes.Compare(a.key, b.key) })
	for _, e := range pairs {
		dst = append(dst, e.val...)
	}
	return dst
}
