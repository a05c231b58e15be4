package filter_test

import (
	"fmt"

	"github.com/karmanmq/karman/filter"
)

func ExampleParseSQL() {
	f, err := filter.ParseSQL("TAGS IN ('TagA', 'TagB') AND price > 100 OR vip = TRUE")
	if err != nil {
		panic(err)
	}
	for _, msg := range []filter.PropertyMap{
		{"TAGS": "TagA", "price": "150"},
		{"TAGS": "TagA", "price": "99"},
		{"TAGS": "TagC", "vip": "true"},
		{"TAGS": "TagB"}, // no price: unknown, which does not match
	} {
		fmt.Println(f.Match(msg))
	}
	// Output:
	// true
	// false
	// true
	// false
}

func ExampleParseSQL_error() {
	_, err := filter.ParseSQL("price > 100 AND (region = 'eu'")
	fmt.Println(err)
	// Output:
	// filter: SQL92 at column 31: expected ')', found end of expression
}

func ExampleCache() {
	cache := filter.NewCache(1000)
	f, err := cache.Get("group", "topic", "a BETWEEN 1 AND 10")
	if err != nil {
		panic(err)
	}
	fmt.Println(f.String(), f.Match(filter.PropertyMap{"a": "10"}))
	// Output:
	// a BETWEEN 1 AND 10 true
}
