package filter

import (
	"strconv"
	"strings"
)

// Expr is a node of a parsed SQL92 expression. The node types are
// *Property, *StringLit, *IntLit, *FloatLit, *BoolLit, *NullLit, *Negate,
// *Not, *Binary, *Between, *In, *StringMatch and *IsNull.
//
// Parentheses leave no node behind: "(a)" is the same tree as "a".
type Expr interface {
	// String renders the node in SQL92 syntax with as few parentheses as
	// the grammar needs; the result parses back to the same tree.
	String() string
	// level is the grammar level the node belongs to (see the prec
	// constants); String parenthesises an operand whose level is below
	// what its position requires.
	level() int
}

// Grammar levels, loosest first. They mirror RocketMQ's grammar, in which
// NOT and unary minus bind tighter than any comparison.
const (
	precOr         = 1 // a OR b
	precAnd        = 2 // a AND b
	precEquality   = 3 // a = b, a <> b, a IS [NOT] NULL
	precComparison = 4 // a > b, BETWEEN, IN, CONTAINS, STARTSWITH, ENDSWITH
	precUnary      = 5 // NOT a, -a
	precPrimary    = 6 // literals, properties
)

// Op is a binary or string-matching operator.
type Op uint8

// Operators. OpOr and OpAnd combine conditions; OpEqual to OpLessOrEqual
// compare two values (in a *Binary); OpContains, OpStartsWith and
// OpEndsWith test a value against a string (in a *StringMatch).
const (
	OpOr Op = iota + 1
	OpAnd
	OpEqual
	OpNotEqual
	OpGreater
	OpGreaterOrEqual
	OpLess
	OpLessOrEqual
	OpContains
	OpStartsWith
	OpEndsWith
)

var opText = [...]string{
	OpOr:             "OR",
	OpAnd:            "AND",
	OpEqual:          "=",
	OpNotEqual:       "<>",
	OpGreater:        ">",
	OpGreaterOrEqual: ">=",
	OpLess:           "<",
	OpLessOrEqual:    "<=",
	OpContains:       "CONTAINS",
	OpStartsWith:     "STARTSWITH",
	OpEndsWith:       "ENDSWITH",
}

// String returns the operator as written in an expression.
func (op Op) String() string {
	if int(op) < len(opText) && opText[op] != "" {
		return opText[op]
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

func (op Op) level() int {
	switch op {
	case OpOr:
		return precOr
	case OpAnd:
		return precAnd
	case OpEqual, OpNotEqual:
		return precEquality
	default:
		return precComparison
	}
}

// Property reads a message property, for example TAGS or a user property.
// Its value is a string, or absent (NULL).
type Property struct{ Name string }

// StringLit is a quoted string: 'it”s'.
type StringLit struct{ Value string }

// IntLit is an integer literal as written (never negative; "-5" is a
// *Negate of 5). It is a Java int when it fits in 32 bits and a Java long
// otherwise, which decides how a property compared with it is parsed.
type IntLit struct{ Value int64 }

// FloatLit is a literal with a decimal point or an exponent: 1.5, .5, 5.,
// 1e3. It is a Java double. It is never negative and never infinite.
type FloatLit struct{ Value float64 }

// BoolLit is TRUE or FALSE.
type BoolLit struct{ Value bool }

// NullLit is NULL.
type NullLit struct{}

// Negate is unary minus.
type Negate struct{ X Expr }

// Not is logical negation.
type Not struct{ X Expr }

// Binary is a logical operator (OpAnd, OpOr) or a comparison (OpEqual to
// OpLessOrEqual).
type Binary struct {
	Op   Op
	L, R Expr
}

// Between is X [NOT] BETWEEN Low AND High; both bounds are inclusive.
type Between struct {
	Not          bool
	X, Low, High Expr
}

// In is X [NOT] IN ('a', 'b', ...).
type In struct {
	Not    bool
	X      *Property
	Values []string
}

// StringMatch is X [NOT] CONTAINS|STARTSWITH|ENDSWITH 'pattern'.
type StringMatch struct {
	Op      Op
	Not     bool
	X       Expr
	Pattern string
}

// IsNull is X IS [NOT] NULL.
type IsNull struct {
	Not bool
	X   Expr
}

func (*Property) level() int    { return precPrimary }
func (*StringLit) level() int   { return precPrimary }
func (*IntLit) level() int      { return precPrimary }
func (*FloatLit) level() int    { return precPrimary }
func (*BoolLit) level() int     { return precPrimary }
func (*NullLit) level() int     { return precPrimary }
func (*Negate) level() int      { return precUnary }
func (*Not) level() int         { return precUnary }
func (e *Binary) level() int    { return e.Op.level() }
func (*Between) level() int     { return precComparison }
func (*In) level() int          { return precComparison }
func (*StringMatch) level() int { return precComparison }
func (*IsNull) level() int      { return precEquality }

func (e *Property) String() string  { return e.Name }
func (e *StringLit) String() string { return quote(e.Value) }
func (e *IntLit) String() string    { return strconv.FormatInt(e.Value, 10) }
func (*NullLit) String() string     { return "NULL" }

func (e *FloatLit) String() string {
	s := strconv.FormatFloat(e.Value, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0" // keep it a decimal literal: "5" would read back as an int
	}
	return s
}

func (e *BoolLit) String() string {
	if e.Value {
		return "TRUE"
	}
	return "FALSE"
}

func (e *Negate) String() string {
	x := operand(e.X, precUnary)
	if strings.HasPrefix(x, "-") {
		return "- " + x // "--" would start a comment
	}
	return "-" + x
}

func (e *Not) String() string { return "NOT " + operand(e.X, precUnary) }

func (e *Binary) String() string {
	lv := e.Op.level()
	return operand(e.L, lv) + " " + e.Op.String() + " " + operand(e.R, lv+1)
}

func (e *Between) String() string {
	kw := " BETWEEN "
	if e.Not {
		kw = " NOT BETWEEN "
	}
	return operand(e.X, precComparison) + kw + operand(e.Low, precUnary) + " AND " + operand(e.High, precUnary)
}

func (e *In) String() string {
	var b strings.Builder
	b.WriteString(e.X.Name)
	if e.Not {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	for i, v := range e.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(v))
	}
	b.WriteString(")")
	return b.String()
}

func (e *StringMatch) String() string {
	kw := " "
	if e.Not {
		kw = " NOT "
	}
	return operand(e.X, precComparison) + kw + e.Op.String() + " " + quote(e.Pattern)
}

func (e *IsNull) String() string {
	if e.Not {
		return operand(e.X, precEquality) + " IS NOT NULL"
	}
	return operand(e.X, precEquality) + " IS NULL"
}

// operand renders e where the grammar needs at least level min.
func operand(e Expr, min int) string {
	if e.level() < min {
		return "(" + e.String() + ")"
	}
	return e.String()
}

// quote renders s as a string literal, doubling single quotes.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// isConstant reports whether e is a literal (RocketMQ's ConstantExpression).
func isConstant(e Expr) bool {
	switch e.(type) {
	case *StringLit, *IntLit, *FloatLit, *BoolLit, *NullLit:
		return true
	}
	return false
}

// isBoolean reports whether e yields a boolean (RocketMQ's
// BooleanExpression). A bare property is not one, but it may stand where a
// condition is expected (see the package documentation).
func isBoolean(e Expr) bool {
	switch e.(type) {
	case *Binary, *Not, *Between, *In, *StringMatch, *IsNull, *BoolLit, *NullLit:
		return true
	}
	return false
}
