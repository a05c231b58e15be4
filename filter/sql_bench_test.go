package filter

import "testing"

// benchExpression is the three-clause expression of BenchmarkSQLMatch.
const benchExpression = "a > 5 AND b = 'x' OR c IS NOT NULL"

func BenchmarkSQLMatch(b *testing.B) {
	for _, bc := range []struct {
		name  string
		props PropertyMap
	}{
		{"true_by_and", PropertyMap{"a": "7", "b": "x", "TAGS": "TagA", "KEYS": "k1"}},
		{"true_by_or", PropertyMap{"a": "3", "b": "x", "c": "1", "TAGS": "TagA"}},
		{"false", PropertyMap{"a": "3", "b": "y", "TAGS": "TagA"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q, err := ParseSQL(benchExpression)
			if err != nil {
				b.Fatal(err)
			}
			want := q.Match(bc.props)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if q.Match(bc.props) != want {
					b.Fatal("result changed")
				}
			}
		})
	}
}

func BenchmarkSQLMatchParallel(b *testing.B) {
	q, err := ParseSQL(benchExpression)
	if err != nil {
		b.Fatal(err)
	}
	props := PropertyMap{"a": "7", "b": "x", "TAGS": "TagA"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !q.Match(props) {
				b.Error("no match")
				return
			}
		}
	})
}

func BenchmarkParseSQL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSQL(benchExpression); err != nil {
			b.Fatal(err)
		}
	}
}
