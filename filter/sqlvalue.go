package filter

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// valueKind is the Java class of a value during evaluation.
type valueKind uint8

const (
	kindNull   valueKind = iota // null: an absent property, NULL, ...
	kindString                  // java.lang.String: property values, string literals
	kindInt                     // java.lang.Integer: integer literals in 32 bits
	kindLong                    // java.lang.Long: larger integer literals
	kindDouble                  // java.lang.Double: decimal literals
	kindBool                    // java.lang.Boolean: TRUE, FALSE, conditions
)

// value is one Java value. A string read from a property keeps its slot so
// that its numeric conversions are done once per evaluation.
type value struct {
	kind valueKind
	b    bool
	slot int32 // property slot, or -1
	i    int64
	f    float64
	s    string
}

func intValue(v int64) value {
	if math.MinInt32 <= v && v <= math.MaxInt32 {
		return value{kind: kindInt, i: v, slot: -1}
	}
	return value{kind: kindLong, i: v, slot: -1}
}

func isNumberKind(k valueKind) bool { return k == kindInt || k == kindLong || k == kindDouble }

// negate is RocketMQ's unary minus: numbers keep their Java class
// (int arithmetic wraps as in Java), anything else becomes null.
func negate(v value) value {
	switch v.kind {
	case kindInt:
		return value{kind: kindInt, i: int64(-int32(v.i)), slot: -1}
	case kindLong:
		return value{kind: kindLong, i: -v.i, slot: -1}
	case kindDouble:
		return value{kind: kindDouble, f: -v.f, slot: -1}
	}
	return value{kind: kindNull, slot: -1}
}

// compareNumbers compares two numbers the way Java's
// ComparisonExpression does: Integer and Long as longs, anything with a
// Double as doubles (Double.compareTo).
func compareNumbers(l, r value) int {
	if l.kind == kindDouble || r.kind == kindDouble {
		return compareDoubles(toDouble(l), toDouble(r))
	}
	switch {
	case l.i < r.i:
		return -1
	case l.i > r.i:
		return 1
	}
	return 0
}

func toDouble(v value) float64 {
	if v.kind == kindDouble {
		return v.f
	}
	return float64(v.i)
}

// compareDoubles is Java's Double.compare: a total order in which -0.0 is
// below 0.0 and NaN is above everything, +Infinity included.
func compareDoubles(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := doubleBits(a), doubleBits(b)
	switch {
	case ab < bb:
		return -1
	case ab > bb:
		return 1
	}
	return 0
}

// doubleBits is Java's Double.doubleToLongBits (one NaN for all NaNs).
func doubleBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// parseJavaInt parses s as Integer.parseInt (bits 32) or Long.parseLong
// (bits 64) do: an optional sign, then decimal digits only (any Unicode
// decimal digit of the Basic Multilingual Plane counts, as in Java); no
// spaces, no decimal point, no exponent, and no overflow.
func parseJavaInt(s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	i := 0
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		i = 1
		if len(s) == 1 {
			return 0, false
		}
	}
	limit := uint64(1)<<(bits-1) - 1 // largest magnitude
	if neg {
		limit++
	}
	var mag uint64
	for i < len(s) {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(s[i:])
		}
		i += w
		d := javaDigit(r)
		if d < 0 {
			return 0, false
		}
		if mag > (limit-uint64(d))/10 {
			return 0, false
		}
		mag = mag*10 + uint64(d)
	}
	if neg {
		return int64(-mag), true
	}
	return int64(mag), true
}

// javaDigit is Character.digit(c, 10) for a UTF-16 code unit: the value of
// a decimal digit, or -1.
func javaDigit(r rune) int {
	if '0' <= r && r <= '9' {
		return int(r - '0')
	}
	if r < utf8.RuneSelf || r > 0xFFFF || !unicode.IsDigit(r) {
		return -1
	}
	// Every range of the Nd table is made of whole runs of ten digits,
	// each run starting at its zero.
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) >= rg.Lo && uint16(r) <= rg.Hi {
			return int(uint16(r)-rg.Lo) % 10
		}
	}
	return -1
}

// parseJavaDouble parses s as Double.valueOf does: surrounding spaces and
// control characters are ignored; then an optional sign and NaN, Infinity,
// a decimal number (digits with an optional point and exponent) or a
// hexadecimal one (0x1.8p1), optionally followed by one of f, F, d, D.
func parseJavaDouble(s string) (float64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(body); n > 0 {
		switch body[n-1] {
		case 'f', 'F', 'd', 'D':
			if !isHex(body) || strings.ContainsAny(body, "pP") {
				s = s[:len(s)-1]
				body = body[:n-1]
			}
		}
	}
	if !javaNumberSyntax(body) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true // out of range: ±Inf or ±0, as in Java
}

func isHex(s string) bool { return len(s) > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') }

// javaNumberSyntax checks an unsigned, suffix-free Java floating-point
// string: digits [. digits] [e [sign] digits] with at least one digit, or
// 0x hexdigits [. hexdigits] p [sign] digits with at least one hex digit.
func javaNumberSyntax(s string) bool {
	digit := isDigit
	i := 0
	hex := isHex(s)
	if hex {
		i = 2
		digit = func(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	}
	n := 0
	for i < len(s) && digit(s[i]) {
		i, n = i+1, n+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && digit(s[i]) {
			i, n = i+1, n+1
		}
	}
	if n == 0 {
		return false
	}
	if i == len(s) {
		return !hex // a hexadecimal number needs its binary exponent
	}
	if hex && s[i] != 'p' && s[i] != 'P' || !hex && s[i] != 'e' && s[i] != 'E' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i > start && i == len(s)
}

// javaBool is Boolean.valueOf(String): "true" in any case is true,
// anything else is false.
func javaBool(s string) bool { return len(s) == 4 && strings.EqualFold(s, "true") }
