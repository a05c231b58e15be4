package wire

import (
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of values skipped under unknown keys.
const maxJSONDepth = 64

// jsonScanner is a small hand-written scanner for the fixed shape of the
// JSON command header. It validates what it reads and never panics.
type jsonScanner struct {
	data   []byte
	pos    int
	strict bool
	// scratch, when set, holds the strings unescape decodes, instead of a
	// new buffer for each: the caller keeps it for reuse once it is done
	// with what the scanner returned.
	scratch *[]byte
}

func (s *jsonScanner) fail(format string, args ...any) error {
	return malformed("json header", s.pos, format, args...)
}

func (s *jsonScanner) skipWS() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *jsonScanner) expect(b byte) error {
	s.skipWS()
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of header, want %q", b)
	}
	if s.data[s.pos] != b {
		return s.fail("found %q, want %q", s.data[s.pos], b)
	}
	s.pos++
	return nil
}

// decodeJSONHeader fills c from a JSON header. With deferExt the
// extFields object is checked but kept as text in c.ext (see
// DecodeOptions.DeferExtFields).
func decodeJSONHeader(data []byte, c *Command, strict, deferExt bool) error {
	s := &jsonScanner{data: data, strict: strict}
	if err := s.expect('{'); err != nil {
		return err
	}
	s.skipWS()
	if s.peek() == '}' {
		s.pos++
		return s.end()
	}
	for {
		s.skipWS()
		key, err := s.readString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		s.skipWS()
		switch string(key) {
		case "code":
			err = s.readInt32(&c.Code, "code")
		case "version":
			err = s.readInt32(&c.Version, "version")
		case "opaque":
			err = s.readInt32(&c.Opaque, "opaque")
		case "flag":
			err = s.readInt32(&c.Flag, "flag")
		case "language":
			err = s.readLanguage(&c.Language)
		case "remark":
			err = s.readRemark(&c.Remark)
		case "extFields":
			if deferExt {
				err = s.deferExtFields(c)
			} else {
				err = s.readExtFields(c)
			}
		default:
			err = s.skipValue(0)
		}
		if err != nil {
			return err
		}
		s.skipWS()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of header inside the object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return s.end()
		default:
			return s.fail("found %q after a value, want ',' or '}'", s.data[s.pos])
		}
	}
}

func (s *jsonScanner) end() error {
	s.skipWS()
	if s.pos != len(s.data) {
		return s.fail("%d bytes of trailing data after the header object", len(s.data)-s.pos)
	}
	return nil
}

// readInt32 reads an integer that fits in int32. A quoted integer is
// accepted too; null leaves *dst unchanged.
func (s *jsonScanner) readInt32(dst *int32, field string) error {
	start := s.pos
	var tok []byte
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '"':
		str, err := s.readString()
		if err != nil {
			return err
		}
		tok = str
	default:
		t, isInt, err := s.readNumber()
		if err != nil {
			return err
		}
		if !isInt {
			s.pos = start
			return s.fail("%s is %q, want an integer", field, t)
		}
		tok = t
	}
	n, err := strconv.ParseInt(string(tok), 10, 32)
	if err != nil {
		s.pos = start
		return s.fail("%s is %q, want an int32", field, tok)
	}
	*dst = int32(n)
	return nil
}

// readLanguage accepts a name (any case; unknown names become
// LanguageOther), a number from 0 to 255, or null.
func (s *jsonScanner) readLanguage(dst *LanguageCode) error {
	start := s.pos
	switch s.peek() {
	case 'n':
		return s.literal("null")
	case '"':
		str, err := s.readString()
		if err != nil {
			return err
		}
		*dst, _ = ParseLanguage(string(str))
		return nil
	}
	tok, isInt, err := s.readNumber()
	if err != nil {
		return err
	}
	n, perr := strconv.ParseUint(string(tok), 10, 8)
	if !isInt || perr != nil {
		s.pos = start
		return s.fail("language is %s, want a name or a number from 0 to 255", tok)
	}
	*dst = LanguageCode(n)
	return nil
}

func (s *jsonScanner) readRemark(dst *string) error {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	if s.peek() != '"' {
		return s.fail("remark must be a string or null")
	}
	str, err := s.readString()
	if err != nil {
		return err
	}
	*dst = string(str)
	return nil
}

// maxExtFields is how many extFields entries are gathered on the stack
// before decoding them; larger objects take a heap allocation.
const maxExtFields = 32

// readExtFields decodes the extFields object (or null) at s.pos into
// c.ExtFields, adding to the entries already there.
func (s *jsonScanner) readExtFields(c *Command) error {
	var arr [maxExtFields]extPair
	pairs, err := s.scanExtFields(arr[:0], true)
	if err != nil {
		return err
	}
	c.putExtPairs(pairs)
	return nil
}

// putExtPairs adds pairs to c.ExtFields, in order, so that a repeated key
// keeps its last value.
func (c *Command) putExtPairs(pairs []extPair) {
	if len(pairs) == 0 {
		return
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, len(pairs))
	}
	for _, e := range pairs {
		c.ExtFields[intern(e.key)] = intern(e.val)
	}
}

// deferExtFields checks the extFields object (or null) at s.pos and keeps
// its text in c.ext for LoadExtFields and DecodeHeader. A second
// extFields key in one header merges into the first, as readExtFields
// does.
func (s *jsonScanner) deferExtFields(c *Command) error {
	if c.ext != nil || c.ExtFields != nil {
		c.LoadExtFields()
		return s.readExtFields(c)
	}
	start := s.pos
	if s.peek() == 'n' {
		return s.literal("null")
	}
	if err := s.gatherExtFields(c); err != nil {
		return err
	}
	c.ext = s.data[start:s.pos:s.pos]
	c.extStrict = s.strict
	return nil
}

// extPair is one extFields entry: the decoded key and value. Numbers and
// booleans keep their JSON text; null values are left out.
type extPair struct{ key, val []byte }

// scanExtFields reads the extFields object (or null) at s.pos and, when
// collect is set, appends its entries to pairs in order; otherwise it
// only checks the object.
func (s *jsonScanner) scanExtFields(pairs []extPair, collect bool) ([]extPair, error) {
	switch s.peek() {
	case 'n':
		return pairs, s.literal("null")
	case '{':
		s.pos++
	default:
		return pairs, s.fail("extFields must be an object or null")
	}
	s.skipWS()
	if s.peek() == '}' {
		s.pos++
		return pairs, nil
	}
	for {
		s.skipWS()
		key, err := s.readString()
		if err != nil {
			return pairs, err
		}
		if err := s.expect(':'); err != nil {
			return pairs, err
		}
		s.skipWS()
		start := s.pos
		var (
			val  []byte
			keep = true
		)
		switch b := s.peek(); {
		case b == '"':
			if !collect {
				err = s.skipString()
			} else {
				val, err = s.readString()
			}
			if err != nil {
				return pairs, err
			}
		case s.strict:
			return pairs, s.fail("extFields[%q] is not a string", key)
		case b == 'n':
			if err := s.literal("null"); err != nil {
				return pairs, err
			}
			keep = false
		case b == 't':
			if err := s.literal("true"); err != nil {
				return pairs, err
			}
			val = s.data[start:s.pos]
		case b == 'f':
			if err := s.literal("false"); err != nil {
				return pairs, err
			}
			val = s.data[start:s.pos]
		case b == '-' || (b >= '0' && b <= '9'):
			if val, _, err = s.readNumber(); err != nil {
				return pairs, err
			}
		default:
			s.pos = start
			return pairs, s.fail("extFields[%q] must be a string, number, boolean or null", key)
		}
		if keep && collect {
			if val == nil {
				val = s.data[start:start] // an empty string, not an absent one
			}
			pairs = append(pairs, extPair{key, val})
		}
		s.skipWS()
		if s.pos >= len(s.data) {
			return pairs, s.fail("unexpected end of header inside extFields")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return pairs, nil
		default:
			return pairs, s.fail("found %q in extFields, want ',' or '}'", s.data[s.pos])
		}
	}
}

// plainByte holds the bytes that a JSON string may hold as they are and
// that need no second look: printable ASCII but the quote and the
// backslash.
var plainByte = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// skipPlain returns the position of the first byte of d at or after i
// that is not a plain byte, or len(d). It looks at eight bytes at a time.
func skipPlain[T string | []byte](d T, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for i+8 <= len(d) {
		x := load64(d, i)
		q := x ^ (ones * '"')
		b := x ^ (ones * '\\')
		// The high bit of a byte of m is set when the byte is a control
		// character, not ASCII, a quote or a backslash. Borrows make the
		// subtractions flag bytes after such a byte too, never before, so
		// the lowest flagged byte is the first that is not plain.
		m := ((x-ones*0x20)&^x | x | (q-ones)&^q | (b-ones)&^b) & highs
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(d) && plainByte[d[i]] {
		i++
	}
	return i
}

// load64 reads the eight bytes of d at i, little-endian.
func load64[T string | []byte](d T, i int) uint64 {
	d = d[i : i+8]
	return uint64(d[0]) | uint64(d[1])<<8 | uint64(d[2])<<16 | uint64(d[3])<<24 |
		uint64(d[4])<<32 | uint64(d[5])<<40 | uint64(d[6])<<48 | uint64(d[7])<<56
}

// skipString checks the JSON string at s.pos as readString would, without
// decoding it.
func (s *jsonScanner) skipString() error {
	d := s.data
	for i := skipPlain(d, s.pos+1); i < len(d); i++ {
		switch b := d[i]; {
		case b == '"':
			s.pos = i + 1
			return nil
		case b == '\\':
			if i+1 >= len(d) {
				s.pos = i
				return s.fail("unterminated escape")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(d, i+2); !ok {
					s.pos = i
					return s.fail("invalid \\u escape")
				}
				i += 5
			default:
				s.pos = i
				return s.fail("invalid escape \\%c", d[i+1])
			}
		case b < 0x20 && s.strict:
			s.pos = i
			return s.fail("raw control character 0x%02x in a string", b)
		}
	}
	s.pos = len(d)
	return s.fail("unterminated string")
}

func (s *jsonScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal, want %s", word)
	}
	s.pos += len(word)
	return nil
}

// readNumber scans a JSON number and returns its text and whether it is an
// integer (no fraction or exponent).
func (s *jsonScanner) readNumber() (tok []byte, isInt bool, err error) {
	start := s.pos
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return nil, false, s.fail("invalid value")
	}
	isInt = true
	if i < len(d) && d[i] == '.' {
		isInt = false
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			s.pos = i
			return nil, false, s.fail("number has no digits after the decimal point")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		isInt = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			s.pos = i
			return nil, false, s.fail("number has no digits in the exponent")
		}
	}
	s.pos = i
	return d[start:i], isInt, nil
}

// readString reads a JSON string at s.pos and returns its decoded bytes:
// a subslice of the input when no unescaping or repair is needed, a new
// buffer otherwise. The result always holds valid UTF-8: lone surrogates
// and invalid bytes become U+FFFD.
func (s *jsonScanner) readString() ([]byte, error) {
	if s.peek() != '"' {
		if s.pos >= len(s.data) {
			return nil, s.fail("unexpected end of header, want a string")
		}
		return nil, s.fail("found %q, want a string", s.data[s.pos])
	}
	d := s.data
	start := s.pos + 1
	i := skipPlain(d, start)
	if i < len(d) && d[i] == '"' {
		s.pos = i + 1
		return d[start:i], nil
	}
	ascii := true
	for ; i < len(d); i++ {
		switch b := d[i]; {
		case b == '"':
			raw := d[start:i]
			if !ascii && !utf8.Valid(raw) {
				return s.unescape(start)
			}
			s.pos = i + 1
			return raw, nil
		case b == '\\':
			return s.unescape(start)
		case b < 0x20:
			if s.strict {
				s.pos = i
				return nil, s.fail("raw control character 0x%02x in a string", b)
			}
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	s.pos = len(d)
	return nil, s.fail("unterminated string")
}

// unescape is the slow path of readString.
func (s *jsonScanner) unescape(start int) ([]byte, error) {
	d := s.data
	// The decoded string is rarely longer than its JSON text.
	n := len(d) - start
	for j := start; j < len(d); j++ {
		if d[j] == '\\' {
			j++
		} else if d[j] == '"' {
			n = j - start
			break
		}
	}
	var out []byte
	if s.scratch != nil && cap(*s.scratch)-len(*s.scratch) >= n {
		out = (*s.scratch)[len(*s.scratch):]
	} else {
		out = make([]byte, 0, n)
	}
	for i := start; i < len(d); {
		b := d[i]
		switch {
		case b == '"':
			s.pos = i + 1
			s.keep(out)
			return out, nil
		case b == '\\':
			if i+1 >= len(d) {
				s.pos = i
				return nil, s.fail("unterminated escape")
			}
			switch e := d[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				i += 2
			case 'b':
				out = append(out, '\b')
				i += 2
			case 'f':
				out = append(out, '\f')
				i += 2
			case 'n':
				out = append(out, '\n')
				i += 2
			case 'r':
				out = append(out, '\r')
				i += 2
			case 't':
				out = append(out, '\t')
				i += 2
			case 'u':
				r, ok := hex4(d, i+2)
				if !ok {
					s.pos = i
					return nil, s.fail("invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok2 := rune(-1), false
					if i+1 < len(d) && d[i] == '\\' && d[i+1] == 'u' {
						r2, ok2 = hex4(d, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				s.pos = i
				return nil, s.fail("invalid escape \\%c", e)
			}
		case b < 0x20 && s.strict:
			s.pos = i
			return nil, s.fail("raw control character 0x%02x in a string", b)
		case b < utf8.RuneSelf:
			out = append(out, b)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d[i:i+size]...)
			}
			i += size
		}
	}
	s.pos = len(d)
	return nil, s.fail("unterminated string")
}

// keep records that out, which unescape returns, uses the scratch
// buffer's memory up to its end.
func (s *jsonScanner) keep(out []byte) {
	if s.scratch == nil {
		return
	}
	sc := *s.scratch
	if len(out) > 0 && cap(sc) > len(sc) && &sc[:len(sc)+1][len(sc)] == &out[0] {
		*s.scratch = sc[:len(sc)+len(out)]
	}
}

func hex4(d []byte, at int) (rune, bool) {
	if at+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skipValue skips one JSON value of any kind.
func (s *jsonScanner) skipValue(depth int) error {
	if depth > maxJSONDepth {
		return s.fail("values nested deeper than %d", maxJSONDepth)
	}
	s.skipWS()
	switch b := s.peek(); {
	case b == '"':
		_, err := s.readString()
		return err
	case b == 't':
		return s.literal("true")
	case b == 'f':
		return s.literal("false")
	case b == 'n':
		return s.literal("null")
	case b == '-' || (b >= '0' && b <= '9'):
		_, _, err := s.readNumber()
		return err
	case b == '{' || b == '[':
		closer := byte('}')
		if b == '[' {
			closer = ']'
		}
		s.pos++
		s.skipWS()
		if s.peek() == closer {
			s.pos++
			return nil
		}
		for {
			if b == '{' {
				s.skipWS()
				if _, err := s.readString(); err != nil {
					return err
				}
				if err := s.expect(':'); err != nil {
					return err
				}
			}
			if err := s.skipValue(depth + 1); err != nil {
				return err
			}
			s.skipWS()
			if s.pos >= len(s.data) {
				return s.fail("unexpected end of header inside a nested value")
			}
			switch s.data[s.pos] {
			case ',':
				s.pos++
			case closer:
				s.pos++
				return nil
			default:
				return s.fail("found %q in a nested value, want ',' or %q", s.data[s.pos], closer)
			}
		}
	case s.pos >= len(s.data):
		return s.fail("unexpected end of header, want a value")
	default:
		return s.fail("invalid character %q at the start of a value", b)
	}
}
