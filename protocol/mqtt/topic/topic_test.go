package topic

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"/", true}, {"a//b", true}, {"a/", true}, {"$SYS/x", true}, {"ü/日本", true}, {" ", true},
		{"", false}, {"a/+", false}, {"#", false}, {"a+b", false}, {"a\x00b", false}, {"\xff", false},
		{"\xed\xa0\x80", false}, {strings.Repeat("a", 65536), false}, {strings.Repeat("a", 65535), true},
	} {
		err := ValidName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidName)) {
			t.Errorf("ValidName(%.20q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestValidFilter(t *testing.T) {
	for _, tc := range []struct {
		filter string
		ok     bool
	}{
		{"a", true}, {"#", true}, {"+", true}, {"a/#", true}, {"+/+", true}, {"/+", true}, {"a//#", true},
		{"+/a/#", true}, {"$SYS/#", true}, {"a/+/", true},
		{"", false}, {"a#", false}, {"a/#/b", false}, {"a+", false}, {"+a/b", false}, {"#/", false}, {"a/b#", false},
		{"a\x00", false},
		{"$share/g/a/b", true}, {"$share/g/#", true}, {"$share/g/+/x", true},
		{"$share/g", false}, {"$share//a", false}, {"$share/g/", false}, {"$share/g+/a", false},
		{"$share/g#/a", false}, {"$share/g/a#", false},
		{"$SHARE/g/a", true}, // not a shared subscription: a literal topic, case matters
	} {
		err := ValidFilter(tc.filter)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidFilter)) {
			t.Errorf("ValidFilter(%q) = %v, want ok=%v", tc.filter, err, tc.ok)
		}
	}
}

func TestParseShared(t *testing.T) {
	g, f, err := ParseShared("$share/consumers/a/+/#")
	if err != nil || g != "consumers" || f != "a/+/#" {
		t.Fatalf("got %q %q %v", g, f, err)
	}
	if _, _, err := ParseShared("a/b"); !errors.Is(err, ErrInvalidFilter) {
		t.Fatalf("non-shared: %v", err)
	}
	if !IsShared("$share/g/x") || IsShared("$SHARE/g/x") {
		t.Fatal("IsShared")
	}
}

var matchCases = []struct {
	filter, name string
	want         bool
}{
	{"a/b", "a/b", true},
	{"a/b", "a/b/", false},
	{"a/b", "/a/b", false},
	{"a/b", "A/b", false},
	{"a/+", "a/b", true},
	{"a/+", "a/", true},
	{"a/+", "a", false},
	{"a/+", "a/b/c", false},
	{"a/#", "a", true},
	{"a/#", "a/b/c", true},
	{"a/#", "a/", true},
	{"a/#", "ab", false},
	{"#", "a/b", true},
	{"#", "/", true},
	{"+", "a", true},
	{"+", "", true},
	{"+", "/", false},
	{"+/+", "/", true},
	{"/+", "/a", true},
	{"+/#", "a", true},
	{"a//b", "a//b", true},
	{"a/+/b", "a//b", true},
	{"#", "$SYS/x", false},
	{"+/x", "$SYS/x", false},
	{"+", "$x", false},
	{"$SYS/#", "$SYS/x", true},
	{"$SYS/+", "$SYS/x", true},
	{"a/#", "a/$x", true},
	{"a/+", "a/$x", true},
}

func TestMatch(t *testing.T) {
	for _, tc := range matchCases {
		if got := Match(tc.filter, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v", tc.filter, tc.name, got)
		}
	}
}

func TestTreeMatchesLikeMatch(t *testing.T) {
	var tr Tree[int, string]
	for i, tc := range matchCases {
		tr.Add(tc.filter, i, tc.filter)
	}
	names := map[string]bool{}
	for _, tc := range matchCases {
		names[tc.name] = true
	}
	for name := range names {
		var want []string
		for _, tc := range matchCases {
			if Match(tc.filter, name) {
				want = append(want, tc.filter)
			}
		}
		want = dedupe(want)
		var got []string
		for _, s := range tr.Match(name, nil) {
			got = append(got, s.Filter)
			if s.Value != s.Filter {
				t.Errorf("value %q for filter %q", s.Value, s.Filter)
			}
		}
		got = dedupe(got)
		if !slices.Equal(got, want) {
			t.Errorf("%q: tree %q, Match %q", name, got, want)
		}
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

func TestTreeAddRemove(t *testing.T) {
	var tr Tree[string, byte]
	if tr.Add("a/+", "s1", 1) {
		t.Fatal("first add replaced")
	}
	if !tr.Add("a/+", "s1", 2) {
		t.Fatal("second add did not replace")
	}
	tr.Add("a/+", "s2", 0)
	tr.Add("a/#", "s1", 1)
	tr.Add("a/b", "s3", 1)
	if tr.Len() != 4 {
		t.Fatalf("len %d", tr.Len())
	}
	got := tr.Match("a/b", nil)
	if len(got) != 4 {
		t.Fatalf("a/b: %v", got)
	}
	for _, s := range got {
		if s.Filter == "a/+" && s.Key == "s1" && s.Value != 2 {
			t.Fatalf("replaced value lost: %v", s)
		}
	}
	if tr.Remove("a/+", "nobody") || tr.Remove("x/y", "s1") || tr.Remove("a", "s1") {
		t.Fatal("removed what was not there")
	}
	for _, f := range []struct{ filter, key string }{{"a/+", "s1"}, {"a/+", "s2"}, {"a/#", "s1"}, {"a/b", "s3"}} {
		if !tr.Remove(f.filter, f.key) {
			t.Fatalf("remove %v", f)
		}
	}
	if tr.Len() != 0 || len(tr.Match("a/b", nil)) != 0 {
		t.Fatal("not empty")
	}
	if !tr.root.empty() {
		t.Fatalf("nodes left behind: %+v", tr.root)
	}
}

func TestTreeConcurrent(t *testing.T) {
	var tr Tree[int, int]
	tr.Add("stable/#", -1, 0)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				f := fmt.Sprintf("stable/%d/+", i%50)
				tr.Add(f, w*10000+i, i)
				tr.Remove(f, w*10000+i)
			}
		}()
	}
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []Sub[int, int]
			for i := 0; i < 2000; i++ {
				buf = tr.Match("stable/7/x", buf[:0])
				found := false
				for _, s := range buf {
					found = found || s.Key == -1
				}
				if !found {
					t.Error("stable subscription not found")
					return
				}
			}
		}()
	}
	wg.Wait()
	if tr.Len() != 1 {
		t.Fatalf("len %d", tr.Len())
	}
}
