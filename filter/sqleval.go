package filter

import (
	"strings"
	"sync"

	"github.com/expr-lang/expr/vm"
)

// evalState is what one evaluation needs: a VM, an environment bound to
// this state, and the properties read so far. States are pooled, so a
// warm Match allocates nothing.
type evalState struct {
	vm     vm.VM
	env    map[string]any
	sql    *SQL
	props  Properties
	slots  []slot
	failed bool // a comparison failed: the message does not match
}

// slot caches one property for one evaluation, with the conversions
// comparisons asked for.
type slot struct {
	read, present    bool
	intDone, intOK   bool // Integer.valueOf
	longDone, longOK bool // Long.valueOf
	dblDone, dblOK   bool // Double.valueOf
	s                string
	i32, i64         int64
	f                float64
}

var statePool = sync.Pool{New: func() any {
	st := &evalState{}
	st.env = map[string]any{
		"P": func(k int) bool { return st.leaf(k, 0) == triTrue },
		"N": func(k int) bool { return st.leaf(k, 0) == triFalse },
		"T": func(k int) int { return st.leaf(k, 0) },
		"Q": st.leaf,
	}
	return st
}}

func (s *SQL) eval(p Properties) bool {
	st := statePool.Get().(*evalState)
	if cap(st.slots) < len(s.props) {
		st.slots = make([]slot, len(s.props))
	}
	st.slots = st.slots[:len(s.props)] // cleared by the previous use
	st.sql, st.props, st.failed = s, p, false
	out, err := st.vm.Run(s.prog, st.env)
	res, _ := out.(bool)
	ok := err == nil && !st.failed && res
	st.sql, st.props = nil, nil
	clear(st.slots) // drop references to property values
	statePool.Put(st)
	return ok
}

// leaf evaluates leaf k of the running expression; pack holds the results
// of the conditions nested in it.
func (st *evalState) leaf(k, pack int) int {
	if st.failed {
		return triNull // the result no longer matters
	}
	lf := &st.sql.leaves[k]
	if lf.shape != shapeGeneral {
		return st.shortcut(lf)
	}
	switch lf.op {
	case leafOrdered:
		l := st.arg(&lf.l, pack>>2)
		if l.kind == kindNull {
			return triNull
		}
		r := st.arg(&lf.r, pack&3)
		if r.kind == kindNull {
			return triNull
		}
		c, ok := st.compareOrdered(l, r)
		if !ok {
			st.failed = true
			return triNull
		}
		var holds bool
		switch lf.cmp {
		case OpGreater:
			holds = c > 0
		case OpGreaterOrEqual:
			holds = c >= 0
		case OpLess:
			holds = c < 0
		default:
			holds = c <= 0
		}
		return tri(holds)
	case leafEqual:
		l := st.arg(&lf.l, pack>>2)
		r := st.arg(&lf.r, pack&3)
		var res int
		switch {
		case l.kind == kindNull && r.kind == kindNull:
			res = triTrue
		case l.kind == kindNull:
			res = triNull
		case r.kind == kindNull:
			res = triFalse
		default:
			c, ok := st.compare(l, r)
			if !ok {
				st.failed = true
				return triNull
			}
			res = tri(c == 0)
		}
		if lf.negate {
			res = triTrue - res
		}
		return res
	case leafIn:
		l := st.arg(&lf.l, 0)
		if l.kind == kindNull {
			return triNull
		}
		var found bool
		if lf.set != nil {
			_, found = lf.set[l.s]
		} else {
			for _, v := range lf.list {
				if v == l.s {
					found = true
					break
				}
			}
		}
		return tri(found != lf.negate)
	case leafContains, leafStartsWith, leafEndsWith:
		l := st.arg(&lf.l, 0)
		if l.kind != kindString {
			return triFalse
		}
		var found bool
		switch lf.op {
		case leafContains:
			found = strings.Contains(l.s, lf.text)
		case leafStartsWith:
			found = strings.HasPrefix(l.s, lf.text)
		default:
			found = strings.HasSuffix(l.s, lf.text)
		}
		return tri(found != lf.not)
	case leafCast:
		// A property as a condition: null when absent, and false when
		// present, since a property value is a string, never a Boolean.
		if st.arg(&lf.l, 0).kind == kindNull {
			return triNull
		}
		return triFalse
	}
	return triNull
}

// shortcut evaluates a leaf comparing a property with a literal.
func (st *evalState) shortcut(lf *leaf) int {
	p, c := &lf.l, &lf.r.val
	if lf.swap {
		p, c = &lf.r, &lf.l.val
	}
	sl := st.prop(p.slot)
	if !sl.present {
		switch {
		case lf.shape == shapeIsNull:
			return tri(!lf.negate)
		case lf.op == leafEqual && lf.swap:
			return tri(lf.negate) // 'x' = absent is false
		}
		return triNull // absent = 'x', and ordering, are null
	}
	var res int
	switch lf.shape {
	case shapeIsNull:
		res = triFalse
	case shapeEqualStr:
		res = tri(sl.s == c.s)
	default:
		n, ok := st.number(value{kind: kindString, slot: p.slot}, c.kind)
		if !ok {
			st.failed = true
			return triNull
		}
		cmp := compareNumbers(n, *c)
		if lf.swap {
			cmp = -cmp
		}
		if lf.shape == shapeEqualNum {
			res = tri(cmp == 0)
			break
		}
		switch lf.cmp {
		case OpGreater:
			return tri(cmp > 0)
		case OpGreaterOrEqual:
			return tri(cmp >= 0)
		case OpLess:
			return tri(cmp < 0)
		default:
			return tri(cmp <= 0)
		}
	}
	if lf.negate {
		res = triTrue - res
	}
	return res
}

func tri(b bool) int {
	if b {
		return triTrue
	}
	return triFalse
}

// arg returns the value of a leaf operand; t is the result of the nested
// condition for argBool.
func (st *evalState) arg(a *arg, t int) value {
	switch a.kind {
	case argConst:
		return a.val
	case argProp:
		sl := st.prop(a.slot)
		if !sl.present {
			return value{kind: kindNull, slot: -1}
		}
		return value{kind: kindString, s: sl.s, slot: a.slot}
	case argBool:
		if t == triNull {
			return value{kind: kindNull, slot: -1}
		}
		return value{kind: kindBool, b: t == triTrue, slot: -1}
	}
	return value{kind: kindNull, slot: -1}
}

// prop reads property slot i, once per evaluation.
func (st *evalState) prop(i int32) *slot {
	sl := &st.slots[i]
	if !sl.read {
		sl.s, sl.present = st.props.Get(st.sql.props[i])
		sl.read = true
	}
	return sl
}

// compareOrdered is RocketMQ's comparison for '>', '>=', '<' and '<=' of
// two non-null values: two strings are both read as doubles (and the
// comparison fails if either is not a number); anything else goes to
// compare.
func (st *evalState) compareOrdered(l, r value) (int, bool) {
	if l.kind == kindString && r.kind == kindString {
		lf, ok := st.double(l)
		if !ok {
			return 0, false
		}
		rf, ok := st.double(r)
		if !ok {
			return 0, false
		}
		return compareDoubles(lf, rf), true
	}
	return st.compare(l, r)
}

// compare is RocketMQ's ComparisonExpression.__compare of two non-null
// values. Values of one class compare naturally. Otherwise the left is
// converted to the right's class or the other way round: numbers widen
// (int to long to double); a string next to a number is parsed as that
// number's Java class (Integer.valueOf, Long.valueOf, Double.valueOf) and
// the comparison fails if it does not parse; a string next to a Boolean
// on its right is Boolean.valueOf'ed; a Boolean on the left of a string
// fails (a ClassCastException in RocketMQ). Any other mix compares as
// "less" (-1).
func (st *evalState) compare(l, r value) (int, bool) {
	if l.kind == r.kind {
		switch l.kind {
		case kindString:
			return strings.Compare(l.s, r.s), true
		case kindBool:
			return compareBools(l.b, r.b), true
		default:
			return compareNumbers(l, r), true
		}
	}
	switch l.kind {
	case kindBool:
		if r.kind == kindString {
			return 0, false
		}
		return -1, true
	case kindString:
		switch r.kind {
		case kindBool:
			return compareBools(javaBool(l.s), r.b), true
		case kindInt, kindLong, kindDouble:
			n, ok := st.number(l, r.kind)
			if !ok {
				return 0, false
			}
			return compareNumbers(n, r), true
		}
		return -1, true
	default: // a number
		switch r.kind {
		case kindInt, kindLong, kindDouble:
			return compareNumbers(l, r), true
		case kindString:
			n, ok := st.number(r, l.kind)
			if !ok {
				return 0, false
			}
			return compareNumbers(l, n), true
		}
		return -1, true
	}
}

func compareBools(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// number parses string v as a number of class k.
func (st *evalState) number(v value, k valueKind) (value, bool) {
	if k == kindDouble {
		f, ok := st.double(v)
		return value{kind: kindDouble, f: f, slot: -1}, ok
	}
	if v.slot < 0 {
		bits := 32
		if k == kindLong {
			bits = 64
		}
		n, ok := parseJavaInt(v.s, bits)
		return value{kind: k, i: n, slot: -1}, ok
	}
	sl := &st.slots[v.slot]
	if k == kindInt {
		if !sl.intDone {
			sl.i32, sl.intOK = parseJavaInt(sl.s, 32)
			sl.intDone = true
		}
		return value{kind: kindInt, i: sl.i32, slot: -1}, sl.intOK
	}
	if !sl.longDone {
		sl.i64, sl.longOK = parseJavaInt(sl.s, 64)
		sl.longDone = true
	}
	return value{kind: kindLong, i: sl.i64, slot: -1}, sl.longOK
}

// double parses string v as Double.valueOf does.
func (st *evalState) double(v value) (float64, bool) {
	if v.slot < 0 {
		return parseJavaDouble(v.s)
	}
	sl := &st.slots[v.slot]
	if !sl.dblDone {
		sl.f, sl.dblOK = parseJavaDouble(sl.s)
		sl.dblDone = true
	}
	return sl.f, sl.dblOK
}
