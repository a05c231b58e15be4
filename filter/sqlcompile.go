package filter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
)

// A parsed expression is compiled into an expr program. RocketMQ
// evaluates with three values (true, false and null, "unknown": a
// comparison with an absent property is null), and a message matches only
// when the expression is true. It evaluates AND and OR left first and the
// right operand only when the left does not decide (false for AND, true
// for OR; a null left still evaluates the right). Evaluation order matters
// because a comparison can fail (a property that does not parse as the
// number it is compared with), and a failure anywhere makes the whole
// message not match.
//
// The program asks, for a condition e and a wanted result w (true or
// false), whether e evaluates to w; NOT e asks the same of e with w
// flipped, so NOT never reaches the program (De Morgan's laws hold in
// three-valued logic and keep RocketMQ's order):
//
//	(a AND b) is true  = a is true  && b is true
//	(a AND b) is false = a is false || b is false
//	(a OR b)  is true  = a is true  || b is true
//	(a OR b)  is false = a is false && b is false
//
// Those use expr's native && and ||. Each evaluates the right operand when
// RocketMQ does, or less often: "a is true && ..." skips it when a is null
// where RocketMQ would evaluate it. That only matters if the right operand
// can fail; then the program computes a's three-valued result t (an int)
// and evaluates the right operand exactly when RocketMQ does:
//
//	(a AND b) is true  = let t = a; t != false && b is true  && t == true
//	(a OR b)  is false = let t = a; t != true  && b is false && t == false
//
// Three-valued results are ints: 0 false, 1 null, 2 true. With them NOT x
// is 2-x, AND the minimum and OR the maximum.
//
// Comparisons are leaves: the program calls back into Go, through
// functions of its environment, to evaluate leaf k over the message's
// properties: p(k) (is it true?), n(k) (is it false?), t(k) (its
// three-valued result), and q(k, pack) for a comparison with conditions
// nested in it, such as (a > 1) = TRUE, whose results the program
// computes first and passes as pack = 4*left + right.
//
// For example, a > 5 AND b = 'x' OR c IS NOT NULL compiles to
//
//	let p = P; ((p(0) && p(1)) || p(2))
//
// NOT (a > 5 OR b = 'x') to
//
//	let n = N; (n(0) && n(1))
//
// and a = 'x' AND b > 5, whose right operand can fail, to
//
//	let p = P; let t = T; (let v0 = t(0); v0 != 0 && p(1) && v0 == 2)

// Three-valued results.
const (
	triFalse = 0
	triNull  = 1
	triTrue  = 2
)

// leafOp is what a leaf computes.
type leafOp uint8

const (
	leafEqual    leafOp = iota + 1 // l = r (negated: l <> r); IS NULL is l = null
	leafOrdered                    // l > r, l >= r, l < r, l <= r
	leafIn                         // l IN (...)
	leafContains                   // l CONTAINS pattern
	leafStartsWith
	leafEndsWith
	leafCast // a property standing as a condition
)

// argKind is where a leaf operand comes from.
type argKind uint8

const (
	argConst  argKind = iota // a literal, or a negated one
	argProp                  // a message property
	argBool                  // a nested condition, its result passed in pack
	argEffect                // null, once the nested condition in pack has run
)

type arg struct {
	kind argKind
	slot int32 // argProp: index into SQL.props
	val  value // argConst
	code *code // argBool, argEffect: the program computing the condition
}

type leaf struct {
	op     leafOp
	shape  leafShape // a common form evaluated by a shortcut
	swap   bool      // the property is the right operand (shapes only)
	negate bool      // result is NOT'ed (<>, IS NOT NULL, NOT IN)
	cmp    Op        // leafOrdered: OpGreater ... OpLessOrEqual
	not    bool      // NOT CONTAINS, NOT STARTSWITH, NOT ENDSWITH
	l, r   arg
	text   string              // CONTAINS, STARTSWITH, ENDSWITH pattern
	list   []string            // IN values, when few
	set    map[string]struct{} // IN values, when many
}

// leafShape marks leaves evaluated by a shortcut: a property against a
// literal. The shortcuts give the same results as the general path.
type leafShape uint8

const (
	shapeGeneral    leafShape = iota
	shapeOrderedNum           // property >, >=, <, <= number
	shapeEqualNum             // property = number
	shapeEqualStr             // property = string
	shapeIsNull               // property IS NULL
)

// setShape picks the shortcut for lf, if one applies.
func (lf *leaf) setShape() {
	l, r := lf.l, lf.r
	if l.kind != argProp && r.kind == argProp {
		l, r = r, l
		lf.swap = true
	}
	if l.kind != argProp || r.kind != argConst {
		lf.swap = false
		return
	}
	switch {
	case lf.op == leafOrdered && isNumberKind(r.val.kind):
		lf.shape = shapeOrderedNum
	case lf.op == leafEqual && isNumberKind(r.val.kind):
		lf.shape = shapeEqualNum
	case lf.op == leafEqual && r.val.kind == kindString:
		lf.shape = shapeEqualStr
	case lf.op == leafEqual && r.val.kind == kindNull && !lf.swap:
		lf.shape = shapeIsNull
	default:
		lf.swap = false
	}
}

// inSetMin is the size from which an IN list is looked up in a map.
const inSetMin = 8

// envTemplate gives the program's environment its shape; each evaluation
// runs with an environment of the same shape bound to its own state.
var envTemplate = map[string]any{
	"P": func(k int) bool { return false },
	"N": func(k int) bool { return false },
	"T": func(k int) int { return triNull },
	"Q": func(k, pack int) int { return triNull },
}

type compiler struct {
	leaves []leaf
	props  []string
	slots  map[string]int32
	vars   int
	used   [4]bool // P, N, T, Q
}

const (
	fnP = iota
	fnN
	fnT
	fnQ
)

var fnNames = [...]string{fnP: "p", fnN: "n", fnT: "t", fnQ: "q"}

// compile turns a checked tree into a program.
func compile(e Expr) (*SQL, error) {
	c := &compiler{slots: map[string]int32{}}
	body := c.test(e, triTrue)
	var src strings.Builder
	for fn, used := range c.used {
		if used {
			fmt.Fprintf(&src, "let %s = %s; ", fnNames[fn], strings.ToUpper(fnNames[fn]))
		}
	}
	body.writeTo(&src)
	prog, err := expr.Compile(src.String(), expr.Env(envTemplate), expr.AsBool(), expr.MaxNodes(0),
		// The optimizer would fold "p(0) || true" to "true", but p(0) may fail.
		expr.Optimize(false))
	if err != nil {
		return nil, fmt.Errorf("filter: SQL92 %q: compiling %q: %w", e, src.String(), err)
	}
	return &SQL{expr: e, text: e.String(), prog: prog, source: src.String(), leaves: c.leaves, props: c.props}, nil
}

func (c *compiler) newVar() string {
	c.vars++
	return "v" + strconv.Itoa(c.vars-1)
}

// code is a piece of program: strings and smaller pieces, written out
// once at the end (building strings level by level would copy them over
// and over in deep expressions).
type code struct{ parts []any }

func cat(parts ...any) *code { return &code{parts: parts} }

func (c *code) writeTo(b *strings.Builder) {
	for _, p := range c.parts {
		switch p := p.(type) {
		case string:
			b.WriteString(p)
		case *code:
			p.writeTo(b)
		}
	}
}

func (c *compiler) call(fn int, k int, pack *code) *code {
	c.used[fn] = true
	if pack == nil {
		return cat(fnNames[fn], "(", strconv.Itoa(k), ")")
	}
	return cat(fnNames[fn], "(", strconv.Itoa(k), ", ", pack, ")")
}

// test compiles "e evaluates to want" (triTrue or triFalse) as a bool.
func (c *compiler) test(e Expr, want int) *code {
	switch e := e.(type) {
	case *Binary:
		switch {
		case e.Op == OpAnd && want == triTrue:
			return c.guarded(e, triFalse, canFail(e.R))
		case e.Op == OpOr && want == triFalse:
			return c.guarded(e, triTrue, canFail(e.R))
		case e.Op == OpAnd || e.Op == OpOr:
			// (a AND b) is false, (a OR b) is true.
			return cat("(", c.test(e.L, want), " || ", c.test(e.R, want), ")")
		}
	case *Not:
		return c.test(e.X, triTrue-want)
	case *BoolLit:
		return cat(strconv.FormatBool(tri(e.Value) == want))
	case *NullLit:
		return cat("false")
	case *Between:
		b := between(e)
		_, prop := e.X.(*Property)
		if prop && isNumberLit(e.Low) && isNumberLit(e.High) {
			// Both comparisons read the same property: when the first
			// is null the property is absent, and the second is null
			// too, without failing. No need to guard it.
			switch {
			case b.Op == OpAnd && want == triTrue:
				return c.guarded(b, triFalse, false)
			case b.Op == OpOr && want == triFalse:
				return c.guarded(b, triTrue, false)
			}
		}
		return c.test(b, want)
	}
	l := c.leafOf(e)
	switch {
	case l.code != nil:
		return cat("(", l.code, ") == ", strconv.Itoa(want))
	case l.pack != nil:
		return cat(c.call(fnQ, l.leaf, l.pack), " == ", strconv.Itoa(want))
	case want == triTrue:
		return c.call(fnP, l.leaf, nil)
	default:
		return c.call(fnN, l.leaf, nil)
	}
}

// guarded compiles (a AND b) is true (stop = false) or (a OR b) is false
// (stop = true): both operands must evaluate to the wanted value, and
// RocketMQ evaluates b unless a evaluates to stop, which matters only if
// b may fail when a is null.
func (c *compiler) guarded(e *Binary, stop int, mayFail bool) *code {
	want := triTrue - stop
	if !mayFail {
		return cat("(", c.test(e.L, want), " && ", c.test(e.R, want), ")")
	}
	v := c.newVar()
	l := c.tri(e.L)
	r := c.test(e.R, want)
	return cat("(let ", v, " = ", l, "; ", v, " != ", strconv.Itoa(stop), " && ", r, " && ", v, " == ", strconv.Itoa(want), ")")
}

// tri compiles e's three-valued result as an int.
func (c *compiler) tri(e Expr) *code {
	switch e := e.(type) {
	case *Binary:
		switch e.Op {
		case OpAnd, OpOr:
			// AND stops at false and takes the minimum, OR stops at
			// true and takes the maximum.
			stop, pick := "0", " < "
			if e.Op == OpOr {
				stop, pick = "2", " > "
			}
			l, r := c.tri(e.L), c.tri(e.R)
			v, w := c.newVar(), c.newVar()
			return cat("(let ", v, " = ", l, "; ", v, " == ", stop, " ? ", stop, " : (let ", w, " = ", r, "; ",
				w, pick, v, " ? ", w, " : ", v, "))")
		}
	case *Not:
		return cat("(2 - ", c.tri(e.X), ")")
	case *BoolLit:
		return cat(strconv.Itoa(tri(e.Value)))
	case *NullLit:
		return cat(strconv.Itoa(triNull))
	case *Between:
		return c.tri(between(e))
	}
	l := c.leafOf(e)
	switch {
	case l.code != nil:
		return l.code
	case l.pack != nil:
		return c.call(fnQ, l.leaf, l.pack)
	default:
		return c.call(fnT, l.leaf, nil)
	}
}

// isNumberLit reports whether e is a number literal, possibly negated.
func isNumberLit(e Expr) bool {
	class, inner := classify(e)
	return class == classNumber && inner == nil
}

// between rewrites BETWEEN as RocketMQ does: x >= low AND x <= high, and
// NOT BETWEEN as x < low OR x > high.
func between(e *Between) *Binary {
	if e.Not {
		return &Binary{Op: OpOr, L: &Binary{Op: OpLess, L: e.X, R: e.Low}, R: &Binary{Op: OpGreater, L: e.X, R: e.High}}
	}
	return &Binary{Op: OpAnd, L: &Binary{Op: OpGreaterOrEqual, L: e.X, R: e.Low}, R: &Binary{Op: OpLessOrEqual, L: e.X, R: e.High}}
}

// lowered is a comparison compiled to a leaf call, or, when no leaf is
// needed, to a three-valued program.
type lowered struct {
	leaf int
	pack *code // the nested conditions' results, if any
	code *code // set instead of leaf
}

func (c *compiler) addLeaf(lf leaf) lowered {
	lf.setShape()
	c.leaves = append(c.leaves, lf)
	l := lowered{leaf: len(c.leaves) - 1}
	switch {
	case isNested(lf.l) && isNested(lf.r):
		l.pack = cat("(", lf.l.code, ") * 4 + ", lf.r.code)
	case isNested(lf.l):
		l.pack = cat("(", lf.l.code, ") * 4")
	case isNested(lf.r):
		l.pack = lf.r.code
	}
	return l
}

func isNested(a arg) bool { return a.kind == argBool || a.kind == argEffect }

func constant(t int) lowered { return lowered{code: cat(strconv.Itoa(t))} }

// seq runs code for its failures only, then yields result.
func (c *compiler) seq(run *code, result int) lowered {
	return lowered{code: cat("(let ", c.newVar(), " = ", run, "; ", strconv.Itoa(result), ")")}
}

// leafOf compiles a comparison: '=', '<>', '>', '>=', '<', '<=', IS
// [NOT] NULL, [NOT] IN, the string matches, or a property standing as a
// condition.
func (c *compiler) leafOf(e Expr) lowered {
	switch e := e.(type) {
	case *Binary:
		switch e.Op {
		case OpEqual, OpNotEqual:
			return c.equal(e.L, e.R, e.Op == OpNotEqual)
		case OpGreater, OpGreaterOrEqual, OpLess, OpLessOrEqual:
			return c.ordered(e.Op, e.L, e.R)
		}
	case *Property:
		return c.addLeaf(leaf{op: leafCast, l: c.arg(e)})
	case *IsNull:
		return c.equal(e.X, &NullLit{}, e.Not)
	case *In:
		lf := leaf{op: leafIn, negate: e.Not, l: c.arg(e.X)}
		if len(e.Values) >= inSetMin {
			lf.set = make(map[string]struct{}, len(e.Values))
			for _, v := range e.Values {
				lf.set[v] = struct{}{}
			}
		} else {
			lf.list = e.Values
		}
		return c.addLeaf(lf)
	case *StringMatch:
		return c.match(e)
	}
	// The parser lets only conditions and properties stand as conditions.
	panic(fmt.Sprintf("filter: %T is not a condition", e))
}

// arg classifies an operand of a comparison.
func (c *compiler) arg(e Expr) arg {
	switch e := e.(type) {
	case *Property:
		slot, ok := c.slots[e.Name]
		if !ok {
			slot = int32(len(c.props))
			c.slots[e.Name] = slot
			c.props = append(c.props, e.Name)
		}
		return arg{kind: argProp, slot: slot}
	case *StringLit:
		return arg{kind: argConst, val: value{kind: kindString, s: e.Value, slot: -1}}
	case *IntLit:
		return arg{kind: argConst, val: intValue(e.Value)}
	case *FloatLit:
		return arg{kind: argConst, val: value{kind: kindDouble, f: e.Value, slot: -1}}
	case *BoolLit:
		return arg{kind: argConst, val: value{kind: kindBool, b: e.Value, slot: -1}}
	case *NullLit:
		return arg{kind: argConst, val: value{kind: kindNull, slot: -1}}
	case *Negate:
		// Unary minus keeps a number's Java class and turns anything
		// else into null: a property or string is not a Number.
		x := c.arg(e.X)
		switch x.kind {
		case argConst:
			return arg{kind: argConst, val: negate(x.val)}
		case argProp:
			return arg{kind: argConst, val: value{kind: kindNull, slot: -1}}
		default:
			return arg{kind: argEffect, code: x.code}
		}
	}
	return arg{kind: argBool, code: c.tri(e)}
}

// equal compiles l = r (l <> r when negate).
func (c *compiler) equal(l, r Expr, negate bool) lowered {
	return c.addLeaf(leaf{op: leafEqual, negate: negate, l: c.arg(l), r: c.arg(r)})
}

// ordered compiles l op r for '>', '>=', '<', '<='. RocketMQ evaluates
// the left operand, stops with null if it is null, then does the same with
// the right one. Conditions cannot be ordered (the parser refuses them),
// but a negated condition can: it is null once evaluated.
func (c *compiler) ordered(op Op, le, re Expr) lowered {
	l, r := c.arg(le), c.arg(re)
	switch {
	case l.kind == argEffect:
		return c.seq(l.code, triNull)
	case l.kind == argConst && l.val.kind == kindNull:
		return constant(triNull)
	case r.kind == argEffect && l.kind == argConst:
		return c.seq(r.code, triNull)
	case r.kind == argEffect:
		isNull := c.addLeaf(leaf{op: leafEqual, l: l, r: arg{kind: argConst, val: value{kind: kindNull, slot: -1}}})
		return lowered{code: cat("(", c.call(fnT, isNull.leaf, nil), " == 2 ? 1 : ", c.seq(r.code, triNull).code, ")")}
	}
	return c.addLeaf(leaf{op: leafOrdered, cmp: op, l: l, r: r})
}

// match compiles CONTAINS, STARTSWITH and ENDSWITH. RocketMQ answers
// false, never null, when the pattern is empty (without evaluating the
// left side), when the left side is null and when it is not a string; the
// NOT forms too.
func (c *compiler) match(e *StringMatch) lowered {
	if e.Pattern == "" {
		return constant(triFalse)
	}
	x := c.arg(e.X)
	switch x.kind {
	case argConst:
		if x.val.kind == kindString && matchString(e.Op, x.val.s, e.Pattern) != e.Not {
			return constant(triTrue)
		}
		return constant(triFalse)
	case argBool, argEffect:
		return c.seq(x.code, triFalse)
	}
	op := map[Op]leafOp{OpContains: leafContains, OpStartsWith: leafStartsWith, OpEndsWith: leafEndsWith}[e.Op]
	return c.addLeaf(leaf{op: op, not: e.Not, l: x, text: e.Pattern})
}

func matchString(op Op, s, pattern string) bool {
	switch op {
	case OpContains:
		return strings.Contains(s, pattern)
	case OpStartsWith:
		return strings.HasPrefix(s, pattern)
	default:
		return strings.HasSuffix(s, pattern)
	}
}

// operandClass is what an operand of a comparison can hold.
type operandClass uint8

const (
	classNull   operandClass = iota // always null
	classString                     // a string or null (a property)
	classNumber
	classBool // a Boolean or null (a condition)
)

// classify returns what operand e holds and the condition whose
// evaluation it needs, if any.
func classify(e Expr) (operandClass, Expr) {
	switch e := e.(type) {
	case *Property, *StringLit:
		return classString, nil
	case *IntLit, *FloatLit:
		return classNumber, nil
	case *NullLit:
		return classNull, nil
	case *BoolLit:
		return classBool, nil
	case *Negate:
		class, inner := classify(e.X)
		if class != classNumber {
			class = classNull
		}
		return class, inner
	}
	return classBool, e
}

// canFail reports whether evaluating condition e may fail (conservatively:
// it may say yes when the failure cannot happen).
func canFail(e Expr) bool {
	switch e := e.(type) {
	case *Binary:
		if e.Op == OpAnd || e.Op == OpOr {
			return canFail(e.L) || canFail(e.R)
		}
		lc, li := classify(e.L)
		rc, ri := classify(e.R)
		if li != nil && canFail(li) || ri != nil && canFail(ri) {
			return true
		}
		if e.Op == OpEqual || e.Op == OpNotEqual {
			// A string next to a number is parsed as one; a Boolean on
			// the left of a string fails in RocketMQ.
			return lc == classString && rc == classNumber || lc == classNumber && rc == classString ||
				lc == classBool && rc == classString
		}
		// Ordering fails when a string does not parse as a number.
		return lc != classNull && rc != classNull && (lc != classNumber || rc != classNumber)
	case *Not:
		return canFail(e.X)
	case *Between:
		return canFail(between(e))
	case *IsNull:
		_, inner := classify(e.X)
		return inner != nil && canFail(inner)
	case *StringMatch:
		_, inner := classify(e.X)
		return e.Pattern != "" && inner != nil && canFail(inner)
	}
	return false // properties, literals, IN
}
