package filter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

type sqlCase struct {
	expr  string
	props PropertyMap
	want  bool
	err   int    // if set, ParseSQL fails at this column
	msg   string // ... with this in the message
	// differs marks a case where RocketMQ answers otherwise, as the
	// package documentation says.
	differs bool
}

// Results were checked against RocketMQ's own filter classes.
var sqlCases = []sqlCase{
	// Numbers: a property compared with a number is parsed as that number.
	{expr: "a > 5", props: PropertyMap{"a": "7"}, want: true},
	{expr: "a > 5", props: PropertyMap{"a": "5"}, want: false},
	{expr: "a >= 5", props: PropertyMap{"a": "5"}, want: true},
	{expr: "a < 5", props: PropertyMap{"a": "-7"}, want: true},
	{expr: "a <= -5", props: PropertyMap{"a": "-5"}, want: true},
	{expr: "a = 5", props: PropertyMap{"a": "5"}, want: true},
	{expr: "a = 5", props: PropertyMap{"a": "05"}, want: true},
	{expr: "a = 5", props: PropertyMap{"a": "+5"}, want: true},
	{expr: "a <> 5", props: PropertyMap{"a": "6"}, want: true},
	{expr: "5 < a", props: PropertyMap{"a": "6"}, want: true},
	{expr: "a > 5", props: PropertyMap{"a": "x"}, want: false},
	{expr: "NOT (a > 5)", props: PropertyMap{"a": "x"}, want: false},                // a failed comparison fails the whole expression
	{expr: "a > 5 OR b = 'y'", props: PropertyMap{"a": "x", "b": "y"}, want: false}, // ... even under OR
	{expr: "b = 'y' OR a > 5", props: PropertyMap{"a": "x", "b": "y"}, want: true},  // unless not evaluated
	{expr: "a > 5 AND b = 'y'", props: PropertyMap{"a": "x", "b": "y"}, want: false},
	{expr: "a = 5", props: PropertyMap{"a": "5.0"}, want: false},                // 5 is an int: "5.0" does not parse
	{expr: "NOT (a = 5)", props: PropertyMap{"a": "5.0"}, want: false},          // ... and fails
	{expr: "a = 5.0", props: PropertyMap{"a": "5"}, want: true},                 // 5.0 is a double
	{expr: "a = 5", props: PropertyMap{"a": " 5"}, want: false},                 // Integer.valueOf does not trim
	{expr: "a = 5.0", props: PropertyMap{"a": " 5 "}, want: true},               // Double.valueOf does
	{expr: "a = 5.0", props: PropertyMap{"a": "5f"}, want: true},                // and takes a type suffix
	{expr: "a = 8.0", props: PropertyMap{"a": "0x1p3"}, want: true},             // and hexadecimal
	{expr: "a > 5", props: PropertyMap{"a": "3000000000"}, want: false},         // not an int: fails
	{expr: "a > 2147483648", props: PropertyMap{"a": "3000000000"}, want: true}, // a long literal reads longs
	{expr: "a > 5", props: PropertyMap{"a": "\u0667"}, want: true},              // Arabic-Indic seven
	{expr: "a > 1.5", props: PropertyMap{"a": "1.75"}, want: true},
	{expr: "a < .5", props: PropertyMap{"a": "0.25"}, want: true},
	{expr: "a = 5.", props: PropertyMap{"a": "5"}, want: true},
	{expr: "a = 1e3", props: PropertyMap{"a": "1000"}, want: true},
	{expr: "a = 1E+3", props: PropertyMap{"a": "1e3"}, want: true},
	{expr: "a < -2.5e-1", props: PropertyMap{"a": "-0.5"}, want: true},
	{expr: "a > 5", props: PropertyMap{"a": "NaN"}, want: false},  // not an int
	{expr: "a > 5.0", props: PropertyMap{"a": "NaN"}, want: true}, // Double.compareTo: NaN is largest
	{expr: "a > 5.0", props: PropertyMap{"a": "Infinity"}, want: true},
	{expr: "a = 5L", props: PropertyMap{"a": "5"}, want: true},
	{expr: "a = 9223372036854775807", props: PropertyMap{"a": "9223372036854775807"}, want: true},
	{expr: "a > b", props: PropertyMap{"a": "10", "b": "9"}, want: true}, // two properties: both read as doubles
	{expr: "a > b", props: PropertyMap{"a": "10", "b": "x"}, want: false},
	{expr: "a > b", props: PropertyMap{"a": "b", "b": "a"}, want: false}, // not "b" > "a": strings are not ordered
	{expr: "2 > 1", props: PropertyMap{}, want: true},
	{expr: "2 = 2.0", props: PropertyMap{}, want: true},

	// Strings: = and <> compare exactly.
	{expr: "b = 'x'", props: PropertyMap{"b": "x"}, want: true},
	{expr: "b = 'x'", props: PropertyMap{"b": "X"}, want: false},
	{expr: "b = 'x'", props: PropertyMap{"b": "x "}, want: false},
	{expr: "b <> 'x'", props: PropertyMap{"b": "y"}, want: true},
	{expr: "b = '5'", props: PropertyMap{"b": "5.0"}, want: false},
	{expr: "b = 'it''s'", props: PropertyMap{"b": "it's"}, want: true},
	{expr: "b = ''''", props: PropertyMap{"b": "'"}, want: true},
	{expr: "b = ''", props: PropertyMap{"b": ""}, want: true},
	{expr: "b = 'a b\tc'", props: PropertyMap{"b": "a b\tc"}, want: true},
	{expr: "b = 'héllo'", props: PropertyMap{"b": "héllo"}, want: true},
	{expr: "'x' = b", props: PropertyMap{"b": "x"}, want: true},
	{expr: "a = b", props: PropertyMap{"a": "1", "b": "1.0"}, want: false},
	{expr: "a = b", props: PropertyMap{"a": "z", "b": "z"}, want: true},
	{expr: "b > 'x'", err: 5, msg: "cannot be compared"},
	{expr: "'x' <= b", err: 1, msg: "cannot be compared"},
	{expr: "b BETWEEN 'a' AND 'z'", err: 11, msg: "cannot be compared"},

	// Booleans.
	{expr: "c = TRUE", props: PropertyMap{"c": "true"}, want: true},
	{expr: "c = TRUE", props: PropertyMap{"c": "TRUE"}, want: true},
	{expr: "c = TRUE", props: PropertyMap{"c": "yes"}, want: false},
	{expr: "c = FALSE", props: PropertyMap{"c": "yes"}, want: true},  // Boolean.valueOf("yes") is false
	{expr: "TRUE = c", props: PropertyMap{"c": "true"}, want: false}, // fails in RocketMQ
	{expr: "TRUE", props: PropertyMap{}, want: true},
	{expr: "true", props: PropertyMap{}, want: true},
	{expr: "FALSE", props: PropertyMap{}, want: false},
	{expr: "NOT FALSE", props: PropertyMap{}, want: true},
	{expr: "TRUE AND TRUE", props: PropertyMap{}, want: true},
	{expr: "TRUE = TRUE", props: PropertyMap{}, want: true},
	{expr: "TRUE = 1", err: 1, msg: "cannot be compared"},
	{expr: "1 = TRUE", props: PropertyMap{}, want: false},
	{expr: "(a > 1) = TRUE", props: PropertyMap{"a": "2"}, want: true},
	{expr: "(a > 1) = FALSE", props: PropertyMap{"a": "2"}, want: false},
	{expr: "(a > 1) = (b > 1)", props: PropertyMap{"a": "2", "b": "3"}, want: true},
	{expr: "'true' = (a > 1)", props: PropertyMap{"a": "2"}, want: true},
	{expr: "(a > 1) IS NULL", props: PropertyMap{}, want: true},
	{expr: "a IS NULL = TRUE", props: PropertyMap{}, want: true},

	// Absent properties: comparisons are null, and null never matches.
	{expr: "a > 5", props: PropertyMap{}, want: false},
	{expr: "NOT (a > 5)", props: PropertyMap{}, want: false},
	{expr: "a <> 5", props: PropertyMap{}, want: false},
	{expr: "b = 'x'", props: PropertyMap{}, want: false},
	{expr: "b <> 'x'", props: PropertyMap{}, want: false},
	{expr: "'x' <> b", props: PropertyMap{}, want: true}, // 'x' = absent is false, not null
	{expr: "a = b", props: PropertyMap{}, want: true},    // null = null is true
	{expr: "a <> b", props: PropertyMap{"a": "1"}, want: true},
	{expr: "a IS NULL", props: PropertyMap{}, want: true},
	{expr: "a IS NULL", props: PropertyMap{"a": ""}, want: false},
	{expr: "a IS NOT NULL", props: PropertyMap{"a": ""}, want: true},
	{expr: "a IS NOT NULL", props: PropertyMap{}, want: false},
	{expr: "NOT (a IS NULL)", props: PropertyMap{"a": "1"}, want: true},
	{expr: "a > 5 OR b IS NULL", props: PropertyMap{}, want: true},
	{expr: "a > 5 AND b IS NULL", props: PropertyMap{}, want: false},
	{expr: "NOT (a > 5 AND b IS NULL)", props: PropertyMap{}, want: false},    // null AND true is null
	{expr: "NOT (a > 5 AND b IS NOT NULL)", props: PropertyMap{}, want: true}, // null AND false is false
	{expr: "NOT (a > 5 OR b IS NULL)", props: PropertyMap{}, want: false},
	{expr: "a BETWEEN 1 AND 10", props: PropertyMap{}, want: false},
	{expr: "a NOT BETWEEN 1 AND 10", props: PropertyMap{}, want: false},
	{expr: "a IN ('x')", props: PropertyMap{}, want: false},
	{expr: "a NOT IN ('x')", props: PropertyMap{}, want: false},
	{expr: "a CONTAINS 'x'", props: PropertyMap{}, want: false},
	{expr: "a NOT CONTAINS 'x'", props: PropertyMap{}, want: false},  // false, not null...
	{expr: "NOT (a CONTAINS 'x')", props: PropertyMap{}, want: true}, // ... so its negation is true
	{expr: "a", props: PropertyMap{"a": "true"}, want: false},        // a property as a condition is never true
	{expr: "NOT a", props: PropertyMap{"a": "true"}, want: true},     // ... but false when present
	{expr: "NOT a", props: PropertyMap{}, want: false},               // ... and null when absent
	{expr: "NULL", props: PropertyMap{}, want: false},
	{expr: "NOT NULL", props: PropertyMap{}, want: false},
	{expr: "-a > 5", props: PropertyMap{"a": "-9"}, want: false}, // minus on a string is null

	// BETWEEN is inclusive.
	{expr: "a BETWEEN 1 AND 10", props: PropertyMap{"a": "1"}, want: true},
	{expr: "a BETWEEN 1 AND 10", props: PropertyMap{"a": "10"}, want: true},
	{expr: "a BETWEEN 1 AND 10", props: PropertyMap{"a": "0"}, want: false},
	{expr: "a BETWEEN 1 AND 10", props: PropertyMap{"a": "11"}, want: false},
	{expr: "a BETWEEN 1 AND 1", props: PropertyMap{"a": "1"}, want: true},
	{expr: "a BETWEEN -10 AND -1", props: PropertyMap{"a": "-10"}, want: true},
	{expr: "a BETWEEN 1.5 AND 2.5", props: PropertyMap{"a": "2.5"}, want: true},
	{expr: "a BETWEEN 1 AND 2.5", props: PropertyMap{"a": "2"}, want: true},
	{expr: "a NOT BETWEEN 1 AND 10", props: PropertyMap{"a": "10"}, want: false},
	{expr: "a NOT BETWEEN 1 AND 10", props: PropertyMap{"a": "11"}, want: true},
	{expr: "a NOT BETWEEN 1 AND 10", props: PropertyMap{"a": "0"}, want: true},
	{expr: "a BETWEEN 5 AND -5", props: PropertyMap{"a": "0"}, want: false}, // accepted: -5 is not a literal
	{expr: "a NOT BETWEEN 10 AND 1", props: PropertyMap{"a": "5"}, want: true},
	{expr: "a BETWEEN 10 AND 1", err: 11, msg: "above upper bound"},
	{expr: "a BETWEEN 1 AND NULL", err: 3, msg: "cannot be NULL"},
	{expr: "a BETWEEN 1 AND 10 AND b = 'x'", props: PropertyMap{"a": "5", "b": "x"}, want: true},

	// IN.
	{expr: "a IN ('x', 'y')", props: PropertyMap{"a": "y"}, want: true},
	{expr: "a IN ('x', 'y')", props: PropertyMap{"a": "z"}, want: false},
	{expr: "a IN ('x')", props: PropertyMap{"a": "X"}, want: false},
	{expr: "a NOT IN ('x', 'y')", props: PropertyMap{"a": "z"}, want: true},
	{expr: "a NOT IN ('x', 'y')", props: PropertyMap{"a": "x"}, want: false},
	{expr: "a IN ('1')", props: PropertyMap{"a": "1.0"}, want: false},
	{expr: "a IN ('it''s', '')", props: PropertyMap{"a": ""}, want: true},
	{expr: "a IN ('a','b','c','d','e','f','g','h','i','j')", props: PropertyMap{"a": "j"}, want: true},
	{expr: "a NOT IN ('a','b','c','d','e','f','g','h','i','j')", props: PropertyMap{"a": "k"}, want: true},
	{expr: "(a) IN ('x')", props: PropertyMap{"a": "x"}, want: true},
	{expr: "'x' IN ('x')", err: 1, msg: "IN needs a property"},
	{expr: "a IN (1, 2)", err: 7, msg: "expected a string in the IN list"},
	{expr: "a IN ()", err: 7, msg: "expected a string"},

	// CONTAINS, STARTSWITH, ENDSWITH.
	{expr: "a CONTAINS 'ell'", props: PropertyMap{"a": "hello"}, want: true},
	{expr: "a CONTAINS 'xyz'", props: PropertyMap{"a": "hello"}, want: false},
	{expr: "a NOT CONTAINS 'xyz'", props: PropertyMap{"a": "hello"}, want: true},
	{expr: "a CONTAINS ''", props: PropertyMap{"a": "hello"}, want: false},     // empty pattern: always false
	{expr: "a NOT CONTAINS ''", props: PropertyMap{"a": "hello"}, want: false}, // ... NOT too
	{expr: "a STARTSWITH 'he'", props: PropertyMap{"a": "hello"}, want: true},
	{expr: "a NOT STARTSWITH 'he'", props: PropertyMap{"a": "hello"}, want: false},
	{expr: "a ENDSWITH 'lo'", props: PropertyMap{"a": "hello"}, want: true},
	{expr: "a NOT ENDSWITH 'lo'", props: PropertyMap{"a": "yellow"}, want: true},
	{expr: "a contains 'L'", props: PropertyMap{"a": "hello"}, want: false},
	{expr: "'hello' CONTAINS 'ell'", props: PropertyMap{}, want: true},
	{expr: "5 CONTAINS '5'", props: PropertyMap{}, want: false}, // not a string
	{expr: "a CONTAINS b", err: 12, msg: "expected a string after CONTAINS"},

	// TAGS is a property like any other.
	{expr: "TAGS = 'TagA'", props: PropertyMap{"TAGS": "TagA"}, want: true},
	{expr: "TAGS IN ('TagA', 'TagB') AND a > 1", props: PropertyMap{"TAGS": "TagB", "a": "2"}, want: true},
	{expr: "TAGS IS NOT NULL", props: PropertyMap{}, want: false},
	{expr: "tags = 'TagA'", props: PropertyMap{"TAGS": "TagA"}, want: false}, // names are case-sensitive

	// Precedence: NOT binds tightest, then comparisons, =, AND, OR.
	{expr: "a = 1 OR b = 1 AND c = 1", props: PropertyMap{"a": "1", "b": "0", "c": "0"}, want: true},
	{expr: "(a = 1 OR b = 1) AND c = 1", props: PropertyMap{"a": "1", "b": "0", "c": "0"}, want: false},
	{expr: "a = 1 AND b = 1 OR c = 1", props: PropertyMap{"a": "0", "b": "0", "c": "1"}, want: true},
	{expr: "a = 1 AND (b = 1 OR c = 1)", props: PropertyMap{"a": "0", "b": "0", "c": "1"}, want: false},
	{expr: "NOT a = 1", props: PropertyMap{"a": "1"}, want: false}, // (NOT a) = 1: a Boolean is not 1
	{expr: "NOT a = 1 OR b = 1", props: PropertyMap{"a": "1", "b": "1"}, want: true},
	{expr: "NOT (a = 1) OR b = 1", props: PropertyMap{"a": "1", "b": "1"}, want: true},
	{expr: "NOT NOT (a = 1)", props: PropertyMap{"a": "1"}, want: true},
	{expr: "NOT (NOT (a = 1) AND b = 1)", props: PropertyMap{"a": "1", "b": "1"}, want: true},
	{expr: "((((a = 1))))", props: PropertyMap{"a": "1"}, want: true},
	{expr: "NOT a > 5", err: 1, msg: "cannot be compared"},
	{expr: "a > 5 > 3", err: 1, msg: "cannot be compared"},

	// Keywords in any case; comments and white space.
	{expr: "a between 1 and 10 or b is not null", props: PropertyMap{"b": ""}, want: true},
	{expr: "a Between 1 And 10 Or b Is Not Null", props: PropertyMap{"a": "3"}, want: true},
	{expr: "not (a in ('x')) and b not in ('y')", props: PropertyMap{"a": "z", "b": "z"}, want: true},
	{expr: "a cOnTaInS 'x' AnD TAGS startswith 'T'", props: PropertyMap{"a": "x", "TAGS": "T1"}, want: true},
	{expr: "a\t>\n5\r\f", props: PropertyMap{"a": "6"}, want: true},
	{expr: "/* comment */ a > 5 -- line comment\n", props: PropertyMap{"a": "6"}, want: true},
	{expr: "a > --5\n5", props: PropertyMap{"a": "6"}, want: true},
	{expr: "a > --5", props: PropertyMap{"a": "6"}, want: true}, // no line break: two minus signs
	{expr: "$a_1 = 1 AND _b$ = 2", props: PropertyMap{"$a_1": "1", "_b$": "2"}, want: true},
	{expr: "a > +5", props: PropertyMap{"a": "6"}, want: true},
	{expr: "a > - -5", props: PropertyMap{"a": "6"}, want: true},
	{expr: "a = -2147483648", props: PropertyMap{"a": "-2147483648"}, want: true},

	// Syntax errors, with the column they are found at.
	{expr: "", err: 1, msg: "unexpected end of expression"},
	{expr: "   ", err: 4, msg: "unexpected end of expression"},
	{expr: "a >", err: 4, msg: "unexpected end of expression"},
	{expr: "(a > 5", err: 7, msg: "expected ')'"},
	{expr: "a > 5)", err: 6, msg: "unexpected ')'", differs: true},
	{expr: "a > 5 b > 6", err: 7, msg: "unexpected property b", differs: true},
	{expr: "a = 'x", err: 5, msg: "string is not closed"},
	{expr: "a = \"x\"", err: 5, msg: "quoted with '"},
	{expr: "a != 5", err: 3, msg: "unexpected character '!'"},
	{expr: "a == 5", err: 4, msg: "expected a value, found '='"},
	{expr: "a.b = 1", err: 2, msg: "unexpected character '.'"},
	{expr: "a > 5 AND", err: 10, msg: "unexpected end"},
	{expr: "AND a > 5", err: 1, msg: "expected a value, found AND"},
	{expr: "a IS 5", err: 6, msg: "expected NULL or NOT NULL after IS"},
	{expr: "a IS NOT 5", err: 10, msg: "expected NULL after IS NOT"},
	{expr: "a NOT LIKE 'x'", err: 7, msg: "after NOT"},
	{expr: "a BETWEEN 1 OR 2", err: 13, msg: "expected AND in BETWEEN"},
	{expr: "a = NULL", err: 5, msg: "use IS NULL"},
	{expr: "'x'", err: 1, msg: "is not a condition"},
	{expr: "5", err: 1, msg: "is not a condition"},
	{expr: "a = 1 AND 5", err: 11, msg: "is not a condition"},
	{expr: "NOT 'x'", err: 5, msg: "is not a condition"},
	{expr: "a > 99999999999999999999", err: 5, msg: "out of range"},
	{expr: "a > 1e400", err: 5, msg: "out of range"},
	{expr: "a > 007", err: 6, msg: "unexpected number 0", differs: true},
	{expr: "a > 1 -- no line break", err: 7, msg: "a -- comment must end with a line break", differs: true},
	{expr: "a > 1 /* open", err: 7, msg: "comment is not closed"},
	{expr: "a = 'é' AND b # 1", err: 15, msg: "unexpected character '#'"},        // columns count characters
	{expr: "a > 5 junk", err: 7, msg: "unexpected property junk", differs: true}, // RocketMQ ignores what follows an expression
	{expr: "a > 0.0", props: PropertyMap{"a": "1"}, want: true, differs: true},   // RocketMQ refuses 0.0
}

func TestSQL(t *testing.T) {
	for _, tc := range sqlCases {
		q, err := ParseSQL(tc.expr)
		if tc.err != 0 {
			var se *SyntaxError
			switch {
			case !errors.As(err, &se):
				t.Errorf("ParseSQL(%q) = %v, want a syntax error at column %d", tc.expr, err, tc.err)
			case se.Pos != tc.err || !strings.Contains(se.Msg, tc.msg) || !errors.Is(err, ErrSyntax):
				t.Errorf("ParseSQL(%q) = %v, want column %d and %q", tc.expr, err, tc.err, tc.msg)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSQL(%q): %v", tc.expr, err)
			continue
		}
		if got := q.Match(tc.props); got != tc.want {
			t.Errorf("%q matches %v = %v, want %v (program %s)", tc.expr, tc.props, got, tc.want, q.source)
		}
		// The canonical form is the same filter.
		q2, err := ParseSQL(q.String())
		if err != nil {
			t.Errorf("ParseSQL(%q), from %q: %v", q.String(), tc.expr, err)
			continue
		}
		if q2.String() != q.String() || q2.Match(tc.props) != tc.want {
			t.Errorf("%q: canonical form %q reads back as %q", tc.expr, q.String(), q2.String())
		}
	}
	if len(sqlCases) < 100 {
		t.Errorf("only %d cases", len(sqlCases))
	}
}

func TestSQLMatchAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	for _, tc := range []struct {
		expr  string
		props PropertyMap
	}{
		{benchExpression, PropertyMap{"a": "7", "b": "x"}},
		{benchExpression, PropertyMap{"a": "3", "c": "1"}},
		{"a = 'x' AND b > 5 OR NOT (c BETWEEN 1.5 AND 10)", PropertyMap{"a": "x", "b": "y", "c": "3"}},
		{"(a > 1) = TRUE AND b NOT IN ('a','b','c','d','e','f','g','h','i')", PropertyMap{"a": "2", "b": "z"}},
		{"a CONTAINS 'x' OR a > b", PropertyMap{"a": "5", "b": "4"}},
	} {
		q, err := ParseSQL(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		q.Match(tc.props) // warm the pool
		if n := testing.AllocsPerRun(100, func() { q.Match(tc.props) }); n != 0 {
			t.Errorf("%q: %v allocations per Match", tc.expr, n)
		}
	}
}

func TestSQLConcurrentMatch(t *testing.T) {
	var qs []*SQL
	for _, tc := range sqlCases {
		if tc.err == 0 {
			q, err := ParseSQL(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			qs = append(qs, q)
		}
	}
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			ok := true
			for round := 0; round < 20; round++ {
				i := 0
				for _, tc := range sqlCases {
					if tc.err != 0 {
						continue
					}
					if qs[i].Match(tc.props) != tc.want {
						ok = false
					}
					i++
				}
			}
			done <- ok
		}()
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("a concurrent Match gave another result")
		}
	}
}

func TestSQLString(t *testing.T) {
	for in, want := range map[string]string{
		"a between 1 and 10 or b is not null": "a BETWEEN 1 AND 10 OR b IS NOT NULL",
		"((a > 1))":                           "a > 1",
		"not (a > 1)":                         "NOT (a > 1)",
		"not not a":                           "NOT NOT a",
		"(a = 1 or b = 1) and c = 1":          "(a = 1 OR b = 1) AND c = 1",
		"a = 1 or (b = 1 and c = 1)":          "a = 1 OR b = 1 AND c = 1",
		"a = 1 or (b = 1 or c = 1)":           "a = 1 OR (b = 1 OR c = 1)",
		"(a > 1) = true":                      "a > 1 = TRUE",
		"true = (a > 1)":                      "TRUE = a > 1",
		"(a = 1) = (b = 1)":                   "a = 1 = (b = 1)",
		"(a IS NULL) IS NULL":                 "a IS NULL IS NULL",
		"a > - -5":                            "a > - -5",
		"a > --5":                             "a > - -5",
		"a > -(-5)":                           "a > - -5",
		"a > +5":                              "a > 5",
		"a = 5.":                              "a = 5.0",
		"a = .5":                              "a = 0.5",
		"a = 1E21":                            "a = 1e+21",
		"a = 5l":                              "a = 5",
		"a in ('x','it''s')":                  "a IN ('x', 'it''s')",
		"a not contains 'x'":                  "a NOT CONTAINS 'x'",
		"(a > 1) contains 'x'":                "a > 1 CONTAINS 'x'",
		"-(a > 1) > 2":                        "-(a > 1) > 2",
		"/* c */ TAGS = 'A' -- c\n":           "TAGS = 'A'",
		"a not between -1 and 1":              "a NOT BETWEEN -1 AND 1",
		"NULL":                                "NULL",
	} {
		q, err := ParseSQL(in)
		if err != nil {
			t.Errorf("ParseSQL(%q): %v", in, err)
			continue
		}
		if got := q.String(); got != want {
			t.Errorf("ParseSQL(%q).String() = %q, want %q", in, got, want)
		}
	}
}

func TestSQLExpr(t *testing.T) {
	q, err := ParseSQL("TAGS IN ('A', 'B') AND NOT (price >= -1.5 OR id IS NULL)")
	if err != nil {
		t.Fatal(err)
	}
	want := &Binary{
		Op: OpAnd,
		L:  &In{X: &Property{Name: "TAGS"}, Values: []string{"A", "B"}},
		R: &Not{X: &Binary{
			Op: OpOr,
			L:  &Binary{Op: OpGreaterOrEqual, L: &Property{Name: "price"}, R: &Negate{X: &FloatLit{Value: 1.5}}},
			R:  &IsNull{X: &Property{Name: "id"}},
		}},
	}
	if !reflect.DeepEqual(q.Expr(), want) {
		t.Errorf("tree = %#v", q.Expr())
	}
	if got := q.Properties(); !reflect.DeepEqual(got, []string{"TAGS", "price", "id"}) {
		t.Errorf("Properties() = %q", got)
	}
}
