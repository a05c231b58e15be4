package filter

import (
	"github.com/expr-lang/expr/vm"
)

// Properties gives an SQL92 filter the properties of one message. Get
// reports the value of a property and whether the message has it. The
// engine adapts its messages to this interface; TAGS is an ordinary
// property there, holding the message's tag.
type Properties interface {
	Get(name string) (value string, ok bool)
}

// PropertyMap is Properties over a map.
type PropertyMap map[string]string

// Get implements Properties.
func (m PropertyMap) Get(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// SQL is a compiled SQL92 filter expression. It is immutable and safe for
// concurrent use.
type SQL struct {
	expr   Expr
	text   string
	prog   *vm.Program
	source string   // the program's source, for tests and debugging
	leaves []leaf   // the comparisons the program calls back into
	props  []string // the properties the expression reads, by slot
}

// ParseSQL parses and compiles a RocketMQ SQL92 expression. An expression
// RocketMQ would refuse is a *SyntaxError matching ErrSyntax; the package
// documentation lists the few differences.
func ParseSQL(expression string) (*SQL, error) {
	e, err := parseExpr(expression)
	if err != nil {
		return nil, err
	}
	return compile(e)
}

// Match reports whether a message with properties p matches: whether the
// expression evaluates to true. Null (unknown) and a failed comparison do
// not match. Match allocates nothing, whatever the number of goroutines
// calling it.
func (s *SQL) Match(p Properties) bool { return s.eval(p) }

// String returns the expression in a canonical form: keywords in upper
// case, single spaces, and only the parentheses the grammar needs.
// ParseSQL(s.String()) is the same filter.
func (s *SQL) String() string { return s.text }

// Expr returns the parsed expression tree. It must not be modified.
func (s *SQL) Expr() Expr { return s.expr }

// Properties returns the names of the properties the expression reads,
// each once, in order of first appearance.
func (s *SQL) Properties() []string { return append([]string(nil), s.props...) }
