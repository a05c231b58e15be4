// Package filter holds Karman's message filters: RocketMQ tag expressions
// ("*", "A || B") and RocketMQ SQL92 property expressions. It never
// imports the engine; the engine adapts these filters to its pull and pop
// paths, giving an SQL92 filter each message's properties through the
// small Properties interface.
//
// Parsed filters (*Tags, *SQL) are immutable and safe for concurrent use,
// and so is Cache.
//
// # SQL92 expressions
//
// ParseSQL compiles an expression such as
//
//	TAGS IN ('TagA', 'TagB') AND price > 100 AND region IS NOT NULL
//
// and (*SQL).Match evaluates it over one message's properties. Language
// and results are those of RocketMQ's SQL92 filter
// (org.apache.rocketmq.filter, ExpressionType.SQL92), quirks included,
// except for the few points under "Differences from RocketMQ".
//
// Grammar, loosest first; keywords are case-insensitive:
//
//	expression := or
//	or         := and { OR and }
//	and        := equality { AND equality }
//	equality   := comparison { '=' comparison | '<>' comparison | IS [NOT] NULL }
//	comparison := unary { ('>' | '>=' | '<' | '<=') unary
//	                    | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                    | [NOT] BETWEEN unary AND unary
//	                    | [NOT] IN '(' string { ',' string } ')' }
//	unary      := '+' unary | '-' unary | NOT unary | primary
//	primary    := string | integer | decimal | TRUE | FALSE | NULL
//	            | property | '(' or ')'
//
// NOT binds tighter than any comparison: NOT a > 5 reads (NOT a) > 5,
// which is refused; write NOT (a > 5). "a = 1 OR b = 1 AND c = 1" is
// "a = 1 OR (b = 1 AND c = 1)".
//
// Tokens:
//   - A property name is [A-Za-z_$][A-Za-z0-9_$]*, case-sensitive; no
//     dots, hyphens or other letters, and a keyword is not a name. TAGS,
//     the message tag, is a property like any other.
//   - A string is quoted with single quotes. Two single quotes in a row
//     stand for one; any other character, line breaks included, stands
//     for itself.
//   - An integer is 0 or digits not starting with 0, with an optional L.
//     It is a Java int when it fits in 32 bits, a Java long otherwise, and
//     an error beyond 64 bits. "007" is not a number.
//   - A decimal has a point or an exponent: 1.5, 5., .5, 1e3, 2.5E-2. It
//     is a Java double; an infinite one is an error.
//   - There are no negative literals: -5 is unary minus applied to 5.
//   - White space is space, tab, CR, LF and form feed. Comments are
//     /* ... */ and -- up to a line break; a -- with no line break after
//     it is two minus signs.
//
// Refused when parsing, as RocketMQ does: ordering ('>', '>=', '<', '<=',
// BETWEEN) a string, TRUE, FALSE or NULL literal or a condition; NULL with
// '=' or '<>' (IS NULL is the way); TRUE or FALSE left of '=' or '<>' with
// a string or number literal on the right; BETWEEN with a NULL literal
// bound, or with two number literal bounds, the lower above the upper
// (negated numbers are not literals there: a BETWEEN 5 AND -5 is accepted
// and matches nothing); IN after anything but a property; a literal or a
// negation where a condition is expected (operands of AND, OR, NOT, and
// the whole expression). A refused expression is a *SyntaxError, which
// matches ErrSyntax and carries the column of the problem.
//
// # Evaluation
//
// Values are Java values: a property is a string, or null when the
// message lacks it; literals are strings, ints, longs, doubles and
// booleans; a condition is a boolean or null. A message matches when the
// expression is true. False, null and a failure (below) do not match.
//
// Logic has three values: true, false and null ("unknown"). NOT null is
// null; false AND x is false, null AND true is null; true OR x is true,
// null OR false is null. So neither a > 5 nor NOT (a > 5) matches a
// message without a, and a > 5 OR b IS NULL matches one with neither.
//
// Comparisons:
//   - A null operand makes '>', '>=', '<', '<=', BETWEEN, IN and NOT IN
//     null.
//   - x = y is true when both are null, null when only x is, and false
//     when only y is: without a, a = 'v' is null but 'v' = a is false, so
//     'v' <> a is true; a = b matches a message with neither. x <> y is
//     NOT (x = y). IS NULL is true exactly when the operand is null.
//   - A string compared with a number is parsed as the number's Java
//     class: Integer.valueOf for an int (optional sign, then decimal
//     digits only, within 32 bits; non-ASCII decimal digits count, as in
//     Java), Long.valueOf for a long, Double.valueOf for a double
//     (surrounding spaces ignored; NaN, Infinity, hexadecimal and an f or
//     d suffix accepted). So for a = "5.0", a = 5.0 is true while a = 5
//     fails, and a > 5 fails for a = "3000000000". A property is parsed at
//     most once per class per message.
//   - A comparison fails when its string does not parse. RocketMQ throws
//     then, and the message does not match, whatever the rest of the
//     expression says, if the failing comparison is evaluated at all.
//     AND and OR evaluate their left operand first and skip the right
//     only when the left decides (false for AND, true for OR; a null left
//     does not): b = 'y' OR a > 5 matches {a: "x", b: "y"}, but
//     a > 5 OR b = 'y' does not.
//   - Two strings: '=' and '<>' compare them exactly (case and spaces
//     count). '>', '>=', '<' and '<=' read both as doubles and fail if
//     either does not parse; since string literals cannot be ordered,
//     that only happens between two properties.
//   - Numbers: ints and longs compare as longs, with a double as doubles,
//     by Java's Double.compare: NaN above everything, -0.0 below 0.0.
//   - A string and TRUE or FALSE: the string is Boolean.valueOf'ed (true
//     for "true" in any case, false for anything else): c = FALSE matches
//     c = "yes". A boolean left of a string fails: TRUE = c never matches
//     a message with c. A boolean and a number are never equal.
//   - BETWEEN is x >= low AND x <= high, inclusive at both ends; NOT
//     BETWEEN is x < low OR x > high.
//   - IN compares strings exactly.
//   - CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are false, never
//     null, when the operand is null or not a string, and when the pattern
//     is empty. So a NOT CONTAINS 'x' does not match a message without a,
//     but NOT (a CONTAINS 'x') does.
//   - A property standing as a condition (a AND b = 1, NOT a) is null
//     when absent and false when present, its string never being a
//     boolean: NOT a matches exactly the messages that have a.
//   - Unary minus negates a number and turns anything else into null.
//
// # Differences from RocketMQ
//
//   - RocketMQ stops reading at the first token that cannot continue the
//     expression and ignores the rest: "a = 1 b = 2" is "a = 1" there, and
//     so is "a = 1 -- note" without a final line break. ParseSQL refuses
//     anything after the expression.
//   - RocketMQ refuses decimal literals below Double.MIN_VALUE, 0.0
//     included; ParseSQL accepts them.
//   - ParseSQL refuses expressions nested more than 200 levels deep or
//     with more than 1000 terms.
//   - Error messages are ours.
//
// # Compilation
//
// ParseSQL parses the expression into a tree of Expr nodes, checks it as
// RocketMQ does, and compiles it once into an expr
// (github.com/expr-lang/expr) program. The program holds the expression's
// logic: AND, OR and NOT, three-valued, in RocketMQ's evaluation order.
// Each comparison is a leaf the program calls back into Go for, which
// reads the properties it needs through Properties (each at most once per
// message) and compares them with Java's conversions. Evaluations run on
// pooled VMs and states, so Match allocates nothing.
package filter
