package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax is matched (errors.Is) by every error ParseSQL returns for an
// expression it refuses.
var ErrSyntax = errors.New("filter: SQL92 syntax error")

// SyntaxError is an invalid SQL92 expression: bad syntax, or a construct
// RocketMQ refuses when it parses (comparing a string with '>', a NOT
// applied to a number, BETWEEN 10 AND 0, ...).
type SyntaxError struct {
	Pos int    // 1-based column, in characters, where the problem was found
	Msg string // what is wrong
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("filter: SQL92 at column %d: %s", e.Pos, e.Msg)
}

// Is makes errors.Is(err, ErrSyntax) true.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

func syntaxErrorf(pos int, format string, args ...any) error {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Limits on what ParseSQL accepts, so that a hostile subscription cannot
// make the broker recurse or compile without bound.
const (
	maxNesting = 200  // parentheses, NOT and unary signs inside each other
	maxNodes   = 1000 // nodes in the tree (an IN list counts as one)
)

// parser is a recursive-descent parser for RocketMQ's SQL92 grammar:
//
//	expression := or EOF
//	or         := and { OR and }
//	and        := equality { AND equality }
//	equality   := comparison { '=' comparison | '<>' comparison | IS [NOT] NULL }
//	comparison := unary { ('>' | '>=' | '<' | '<=') unary
//	                    | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                    | [NOT] BETWEEN unary AND unary
//	                    | [NOT] IN '(' string { ',' string } ')' }
//	unary      := '+' unary | '-' unary | NOT unary | primary
//	primary    := literal | property | '(' or ')'
//	literal    := string | integer | decimal | TRUE | FALSE | NULL
//
// Each rule builds its node with the checks RocketMQ makes while parsing.
type parser struct {
	toks  []token
	i     int
	depth int
	nodes int
}

// parseExpr parses an expression into its tree.
func parseExpr(src string) (Expr, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, pos, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		if t.kind == tokMinus && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tokMinus {
			return nil, syntaxErrorf(t.pos, "unexpected '-' (a -- comment must end with a line break)")
		}
		return nil, syntaxErrorf(t.pos, "unexpected %s", t.describe())
	}
	if err := asCondition(e, pos); err != nil {
		return nil, err
	}
	return e, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) take() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) expect(k tokenKind, what string) (token, error) {
	t := p.peek()
	if t.kind != k {
		return t, syntaxErrorf(t.pos, "expected %s, found %s", what, t.describe())
	}
	return p.take(), nil
}

// node counts a new node against maxNodes.
func (p *parser) node(pos int) error {
	p.nodes++
	if p.nodes > maxNodes {
		return syntaxErrorf(pos, "expression is too long (more than %d terms)", maxNodes)
	}
	return nil
}

// Each rule returns its node and the column where the node starts.

func (p *parser) or() (Expr, int, error) {
	l, lpos, err := p.and()
	if err != nil {
		return nil, 0, err
	}
	for p.peek().kind == tokOr {
		p.take()
		r, rpos, err := p.and()
		if err != nil {
			return nil, 0, err
		}
		if err := logical(l, lpos, r, rpos); err != nil {
			return nil, 0, err
		}
		l = &Binary{Op: OpOr, L: l, R: r}
	}
	return l, lpos, nil
}

func (p *parser) and() (Expr, int, error) {
	l, lpos, err := p.equality()
	if err != nil {
		return nil, 0, err
	}
	for p.peek().kind == tokAnd {
		p.take()
		r, rpos, err := p.equality()
		if err != nil {
			return nil, 0, err
		}
		if err := logical(l, lpos, r, rpos); err != nil {
			return nil, 0, err
		}
		l = &Binary{Op: OpAnd, L: l, R: r}
	}
	return l, lpos, nil
}

// logical checks the operands of AND and OR.
func logical(l Expr, lpos int, r Expr, rpos int) error {
	if err := asCondition(l, lpos); err != nil {
		return err
	}
	if err := asCondition(r, rpos); err != nil {
		return err
	}
	return nil
}

// asCondition checks that e can stand where a condition is expected: it
// yields a boolean, or it is a property (RocketMQ's boolean cast).
func asCondition(e Expr, pos int) error {
	if isBoolean(e) {
		return nil
	}
	if _, ok := e.(*Property); ok {
		return nil
	}
	return syntaxErrorf(pos, "%s is not a condition", e)
}

func (p *parser) equality() (Expr, int, error) {
	l, lpos, err := p.comparison()
	if err != nil {
		return nil, 0, err
	}
	for {
		t := p.peek()
		switch t.kind {
		case tokEq, tokNe:
			p.take()
			r, rpos, err := p.comparison()
			if err != nil {
				return nil, 0, err
			}
			if err := checkEquality(l, lpos, r, rpos); err != nil {
				return nil, 0, err
			}
			op := OpEqual
			if t.kind == tokNe {
				op = OpNotEqual
			}
			l = &Binary{Op: op, L: l, R: r}
		case tokIs:
			p.take()
			not := p.peek().kind == tokNot
			what := "NULL or NOT NULL after IS"
			if not {
				p.take()
				what = "NULL after IS NOT"
			}
			if _, err := p.expect(tokNull, what); err != nil {
				return nil, 0, err
			}
			if err := p.node(t.pos); err != nil {
				return nil, 0, err
			}
			l = &IsNull{Not: not, X: l}
		default:
			return l, lpos, nil
		}
	}
}

func (p *parser) comparison() (Expr, int, error) {
	l, lpos, err := p.unary()
	if err != nil {
		return nil, 0, err
	}
	for {
		t := p.peek()
		not := false
		kind := t.kind
		if kind == tokNot {
			switch next := p.peekAt(1).kind; next {
			case tokContains, tokStartsWith, tokEndsWith, tokBetween, tokIn:
				p.take()
				not, kind = true, next
			default:
				return nil, 0, syntaxErrorf(p.peekAt(1).pos, "expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT, found %s", p.peekAt(1).describe())
			}
		}
		switch kind {
		case tokGt, tokGe, tokLt, tokLe:
			p.take()
			r, rpos, err := p.unary()
			if err != nil {
				return nil, 0, err
			}
			if err := checkOrdered(l, lpos); err != nil {
				return nil, 0, err
			}
			if err := checkOrdered(r, rpos); err != nil {
				return nil, 0, err
			}
			l = &Binary{Op: orderedOps[kind], L: l, R: r}
		case tokContains, tokStartsWith, tokEndsWith:
			p.take()
			s, err := p.expect(tokString, "a string after "+tokenText[kind])
			if err != nil {
				return nil, 0, err
			}
			if err := p.node(t.pos); err != nil {
				return nil, 0, err
			}
			l = &StringMatch{Op: matchOps[kind], Not: not, X: l, Pattern: s.text}
		case tokBetween:
			bt := p.take()
			low, lowpos, err := p.unary()
			if err != nil {
				return nil, 0, err
			}
			if _, err := p.expect(tokAnd, "AND in BETWEEN"); err != nil {
				return nil, 0, err
			}
			high, highpos, err := p.unary()
			if err != nil {
				return nil, 0, err
			}
			if !not {
				if err := checkBetweenBounds(low, lowpos, high, bt.pos); err != nil {
					return nil, 0, err
				}
			}
			for _, o := range []struct {
				e   Expr
				pos int
			}{{l, lpos}, {low, lowpos}, {high, highpos}} {
				if err := checkOrdered(o.e, o.pos); err != nil {
					return nil, 0, err
				}
			}
			if err := p.node(t.pos); err != nil {
				return nil, 0, err
			}
			l = &Between{Not: not, X: l, Low: low, High: high}
		case tokIn:
			p.take()
			prop, ok := l.(*Property)
			if !ok {
				return nil, 0, syntaxErrorf(lpos, "IN needs a property on its left, found %s", l)
			}
			if _, err := p.expect(tokLParen, "'(' after IN"); err != nil {
				return nil, 0, err
			}
			var values []string
			for {
				s, err := p.expect(tokString, "a string in the IN list")
				if err != nil {
					return nil, 0, err
				}
				values = append(values, s.text)
				if p.peek().kind != tokComma {
					break
				}
				p.take()
			}
			if _, err := p.expect(tokRParen, "',' or ')' in the IN list"); err != nil {
				return nil, 0, err
			}
			if err := p.node(t.pos); err != nil {
				return nil, 0, err
			}
			l = &In{Not: not, X: prop, Values: values}
		default:
			return l, lpos, nil
		}
	}
}

var orderedOps = map[tokenKind]Op{tokGt: OpGreater, tokGe: OpGreaterOrEqual, tokLt: OpLess, tokLe: OpLessOrEqual}

var matchOps = map[tokenKind]Op{tokContains: OpContains, tokStartsWith: OpStartsWith, tokEndsWith: OpEndsWith}

// checkOrdered is RocketMQ's check on an operand of '>', '>=', '<', '<='
// and BETWEEN: a literal must be a number, and a condition cannot be
// ordered.
func checkOrdered(e Expr, pos int) error {
	switch e.(type) {
	case *IntLit, *FloatLit:
		return nil
	case *StringLit, *BoolLit, *NullLit:
		return syntaxErrorf(pos, "%s cannot be compared with '>', '>=', '<', '<=' or BETWEEN (only numbers can)", e)
	}
	if isBoolean(e) {
		return syntaxErrorf(pos, "condition %s cannot be compared with '>', '>=', '<', '<=' or BETWEEN", e)
	}
	return nil
}

// checkEquality is RocketMQ's check on the operands of '=' and '<>': NULL
// cannot be compared (IS NULL is the way), and a TRUE or FALSE literal on
// the left cannot be compared with a string or number literal.
func checkEquality(l Expr, lpos int, r Expr, rpos int) error {
	if _, ok := l.(*NullLit); ok {
		return syntaxErrorf(lpos, "NULL cannot be compared with '=' or '<>' (use IS NULL)")
	}
	if _, ok := r.(*NullLit); ok {
		return syntaxErrorf(rpos, "NULL cannot be compared with '=' or '<>' (use IS NULL)")
	}
	if _, ok := l.(*BoolLit); ok && isConstant(r) && !isBoolean(r) {
		return syntaxErrorf(lpos, "%s cannot be compared with %s", l, r)
	}
	return nil
}

// checkBetweenBounds is RocketMQ's check on BETWEEN with two literal
// bounds: neither is NULL, and the lower is not above the upper. (Negative
// numbers are not literals there: "BETWEEN 5 AND -5" passes, as in RocketMQ.)
func checkBetweenBounds(low Expr, lowpos int, high Expr, pos int) error {
	if !isConstant(low) || !isConstant(high) {
		return nil
	}
	_, ln := low.(*NullLit)
	_, hn := high.(*NullLit)
	if ln || hn {
		return syntaxErrorf(pos, "BETWEEN bounds cannot be NULL")
	}
	lv, lok := numberValue(low)
	hv, hok := numberValue(high)
	if !lok || !hok {
		return nil // refused by checkOrdered
	}
	if compareNumbers(hv, lv) < 0 {
		return syntaxErrorf(lowpos, "BETWEEN lower bound %s is above upper bound %s", low, high)
	}
	return nil
}

// numberValue returns the Java value of a number literal.
func numberValue(e Expr) (value, bool) {
	switch e := e.(type) {
	case *IntLit:
		return intValue(e.Value), true
	case *FloatLit:
		return value{kind: kindDouble, f: e.Value}, true
	}
	return value{}, false
}

func (p *parser) unary() (Expr, int, error) {
	t := p.peek()
	switch t.kind {
	case tokPlus, tokMinus, tokNot:
		p.take()
		if err := p.enter(t.pos); err != nil {
			return nil, 0, err
		}
		x, xpos, err := p.unary()
		p.depth--
		if err != nil {
			return nil, 0, err
		}
		switch t.kind {
		case tokPlus:
			return x, t.pos, nil
		case tokMinus:
			if err := p.node(t.pos); err != nil {
				return nil, 0, err
			}
			return &Negate{X: x}, t.pos, nil
		default:
			if err := asCondition(x, xpos); err != nil {
				return nil, 0, err
			}
			if err := p.node(t.pos); err != nil {
				return nil, 0, err
			}
			return &Not{X: x}, t.pos, nil
		}
	}
	return p.primary()
}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > maxNesting {
		return syntaxErrorf(pos, "expression is nested too deeply (more than %d levels)", maxNesting)
	}
	return nil
}

func (p *parser) primary() (Expr, int, error) {
	t := p.take()
	if err := p.node(t.pos); err != nil {
		return nil, 0, err
	}
	switch t.kind {
	case tokIdent:
		return &Property{Name: t.text}, t.pos, nil
	case tokString:
		return &StringLit{Value: t.text}, t.pos, nil
	case tokInteger:
		digits := strings.TrimRight(t.text, "lL")
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return nil, 0, syntaxErrorf(t.pos, "integer %s is out of range (at most %d)", t.text, int64(math.MaxInt64))
		}
		return &IntLit{Value: v}, t.pos, nil
	case tokDecimal:
		v, err := strconv.ParseFloat(t.text, 64)
		if err != nil || math.IsInf(v, 0) {
			return nil, 0, syntaxErrorf(t.pos, "number %s is out of range", t.text)
		}
		return &FloatLit{Value: v}, t.pos, nil
	case tokTrue, tokFalse:
		return &BoolLit{Value: t.kind == tokTrue}, t.pos, nil
	case tokNull:
		return &NullLit{}, t.pos, nil
	case tokLParen:
		if err := p.enter(t.pos); err != nil {
			return nil, 0, err
		}
		e, _, err := p.or()
		p.depth--
		if err != nil {
			return nil, 0, err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return nil, 0, err
		}
		p.nodes-- // parentheses leave no node
		return e, t.pos, nil
	}
	if t.kind == tokEOF {
		return nil, 0, syntaxErrorf(t.pos, "unexpected end of expression, expected a value")
	}
	return nil, 0, syntaxErrorf(t.pos, "expected a value, found %s", t.describe())
}
