package filter

import (
	"strings"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokString  // 'text'; token.text holds the decoded value
	tokInteger // DECIMAL_LITERAL: 0, 42, 42L
	tokDecimal // FLOATING_POINT_LITERAL: 1.5, .5, 5., 1e3
	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokTrue
	tokFalse
	tokNull
	tokIs
	tokContains
	tokStartsWith
	tokEndsWith
	tokEq     // =
	tokNe     // <>
	tokGt     // >
	tokGe     // >=
	tokLt     // <
	tokLe     // <=
	tokLParen // (
	tokRParen // )
	tokComma  // ,
	tokPlus   // +
	tokMinus  // -
)

// keywords are matched case-insensitively (ASCII only); any other word is
// a property name.
var keywords = map[string]tokenKind{
	"NOT":        tokNot,
	"AND":        tokAnd,
	"OR":         tokOr,
	"BETWEEN":    tokBetween,
	"IN":         tokIn,
	"TRUE":       tokTrue,
	"FALSE":      tokFalse,
	"NULL":       tokNull,
	"IS":         tokIs,
	"CONTAINS":   tokContains,
	"STARTSWITH": tokStartsWith,
	"ENDSWITH":   tokEndsWith,
}

var tokenText = [...]string{
	tokEOF:        "end of expression",
	tokIdent:      "property",
	tokString:     "string",
	tokInteger:    "number",
	tokDecimal:    "number",
	tokNot:        "NOT",
	tokAnd:        "AND",
	tokOr:         "OR",
	tokBetween:    "BETWEEN",
	tokIn:         "IN",
	tokTrue:       "TRUE",
	tokFalse:      "FALSE",
	tokNull:       "NULL",
	tokIs:         "IS",
	tokContains:   "CONTAINS",
	tokStartsWith: "STARTSWITH",
	tokEndsWith:   "ENDSWITH",
	tokEq:         "'='",
	tokNe:         "'<>'",
	tokGt:         "'>'",
	tokGe:         "'>='",
	tokLt:         "'<'",
	tokLe:         "'<='",
	tokLParen:     "'('",
	tokRParen:     "')'",
	tokComma:      "','",
	tokPlus:       "'+'",
	tokMinus:      "'-'",
}

type token struct {
	kind tokenKind
	pos  int    // 1-based column (in characters) of the first character
	text string // as written; the decoded value for tokString
}

// describe names the token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tokIdent:
		return "property " + t.text
	case tokString:
		return "string " + quote(t.text)
	case tokInteger, tokDecimal:
		return "number " + t.text
	}
	return tokenText[t.kind]
}

// lexer splits an expression into tokens the way RocketMQ's JavaCC token
// manager does: longest match, keywords before identifiers.
type lexer struct {
	src string
	off int // byte offset of the next character
	col int // 1-based column of the next character
}

// tokens returns every token of src, ending with tokEOF.
func tokenize(src string) ([]token, error) {
	lx := lexer{src: src, col: 1}
	var toks []token
	for {
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, t)
		if t.kind == tokEOF {
			return toks, nil
		}
	}
}

// advance moves past n bytes of ASCII.
func (lx *lexer) advance(n int) {
	lx.off += n
	lx.col += n
}

func (lx *lexer) peekByte(i int) byte {
	if lx.off+i < len(lx.src) {
		return lx.src[lx.off+i]
	}
	return 0
}

func (lx *lexer) next() (token, error) {
	if err := lx.skipSpace(); err != nil {
		return token{}, err
	}
	if lx.off >= len(lx.src) {
		return token{kind: tokEOF, pos: lx.col}, nil
	}
	start, pos := lx.off, lx.col
	c := lx.src[lx.off]
	switch {
	case isIdentStart(c):
		n := 1
		for lx.off+n < len(lx.src) && isIdentPart(lx.src[lx.off+n]) {
			n++
		}
		lx.advance(n)
		word := lx.src[start:lx.off]
		if len(word) <= len("STARTSWITH") {
			if k, ok := keywords[strings.ToUpper(word)]; ok {
				return token{kind: k, pos: pos, text: word}, nil
			}
		}
		return token{kind: tokIdent, pos: pos, text: word}, nil
	case isDigit(c) || c == '.' && isDigit(lx.peekByte(1)):
		return lx.number(), nil
	case c == '\'':
		return lx.stringLiteral()
	}
	op := func(k tokenKind, n int) (token, error) {
		lx.advance(n)
		return token{kind: k, pos: pos, text: lx.src[start:lx.off]}, nil
	}
	switch c {
	case '=':
		return op(tokEq, 1)
	case '<':
		switch lx.peekByte(1) {
		case '>':
			return op(tokNe, 2)
		case '=':
			return op(tokLe, 2)
		}
		return op(tokLt, 1)
	case '>':
		if lx.peekByte(1) == '=' {
			return op(tokGe, 2)
		}
		return op(tokGt, 1)
	case '(':
		return op(tokLParen, 1)
	case ')':
		return op(tokRParen, 1)
	case ',':
		return op(tokComma, 1)
	case '+':
		return op(tokPlus, 1)
	case '-':
		return op(tokMinus, 1)
	}
	r, _ := utf8.DecodeRuneInString(lx.src[lx.off:])
	if r == '"' {
		return token{}, syntaxErrorf(pos, "unexpected '\"': strings are quoted with '")
	}
	if c == '/' && lx.peekByte(1) == '*' {
		return token{}, syntaxErrorf(pos, "comment is not closed")
	}
	return token{}, syntaxErrorf(pos, "unexpected character %q", r)
}

// skipSpace skips white space (space, tab, CR, LF, form feed) and comments:
// "/* ... */", and "--" up to the end of the line. A "--" with no line end
// after it is not a comment but two minus signs, as in RocketMQ.
func (lx *lexer) skipSpace() error {
	for lx.off < len(lx.src) {
		switch c := lx.src[lx.off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			lx.advance(1)
		case c == '-' && lx.peekByte(1) == '-':
			end := strings.IndexAny(lx.src[lx.off+2:], "\r\n")
			if end < 0 {
				return nil
			}
			lx.skipText(lx.off + 2 + end + 1)
		case c == '/' && lx.peekByte(1) == '*':
			end := strings.Index(lx.src[lx.off+2:], "*/")
			if end < 0 {
				return nil // reported by next as an unexpected '/'
			}
			lx.skipText(lx.off + 2 + end + 2)
		default:
			return nil
		}
	}
	return nil
}

// skipText moves to byte offset end, counting characters.
func (lx *lexer) skipText(end int) {
	lx.col += utf8.RuneCountInString(lx.src[lx.off:end])
	lx.off = end
}

// number lexes DECIMAL_LITERAL ("0", or [1-9][0-9]* with an optional l/L)
// or FLOATING_POINT_LITERAL (digits with a '.' and/or an exponent),
// whichever is longer. "007" is three tokens, as in RocketMQ.
func (lx *lexer) number() token {
	start, pos := lx.off, lx.col
	i := lx.off
	for i < len(lx.src) && isDigit(lx.src[i]) {
		i++
	}
	intEnd := i
	decimal := false
	if i < len(lx.src) && lx.src[i] == '.' {
		decimal = true
		i++
		for i < len(lx.src) && isDigit(lx.src[i]) {
			i++
		}
	}
	if n := exponentLen(lx.src[i:]); n > 0 {
		decimal = true
		i += n
	}
	if decimal {
		lx.advance(i - start)
		return token{kind: tokDecimal, pos: pos, text: lx.src[start:lx.off]}
	}
	if lx.src[start] == '0' {
		intEnd = start + 1
	} else if intEnd < len(lx.src) && (lx.src[intEnd] == 'l' || lx.src[intEnd] == 'L') {
		intEnd++
	}
	lx.advance(intEnd - start)
	return token{kind: tokInteger, pos: pos, text: lx.src[start:lx.off]}
}

// exponentLen returns the length of an exponent ("e5", "E-3") at the start
// of s, or 0.
func exponentLen(s string) int {
	if len(s) == 0 || s[0] != 'e' && s[0] != 'E' {
		return 0
	}
	i := 1
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == digits {
		return 0
	}
	return i
}

// stringLiteral lexes '...' where ” stands for one quote. Any other
// character, line breaks included, is taken as is.
func (lx *lexer) stringLiteral() (token, error) {
	pos := lx.col
	i := lx.off + 1
	var b strings.Builder
	for {
		j := strings.IndexByte(lx.src[i:], '\'')
		if j < 0 {
			return token{}, syntaxErrorf(pos, "string is not closed")
		}
		b.WriteString(lx.src[i : i+j])
		i += j + 1
		if i < len(lx.src) && lx.src[i] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		break
	}
	lx.skipText(i)
	return token{kind: tokString, pos: pos, text: b.String()}, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdentStart and isIdentPart follow RocketMQ's ID token:
// [a-zA-Z_$][a-zA-Z0-9_$]*. Dots, hyphens and non-ASCII letters are not
// part of a property name.
func isIdentStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }
