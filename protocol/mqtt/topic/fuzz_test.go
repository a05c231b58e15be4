package topic

import (
	"strings"
	"testing"
)

// FuzzMatch checks, for any filter and name, that validation does not
// panic, that Match and a Tree holding the filter agree, and that a valid
// filter without wildcards matches exactly the name equal to it.
func FuzzMatch(f *testing.F) {
	for _, tc := range matchCases {
		f.Add(tc.filter, tc.name)
	}
	f.Add("$share/g/a/#", "a/b")
	f.Fuzz(func(t *testing.T, filter, name string) {
		ferr := ValidFilter(filter)
		nerr := ValidName(name)
		if ferr != nil || nerr != nil || IsShared(filter) {
			return
		}
		want := Match(filter, name)
		var tr Tree[int, int]
		tr.Add(filter, 1, 0)
		got := len(tr.Match(name, nil)) == 1
		if got != want {
			t.Fatalf("Match(%q, %q) = %v, tree %v", filter, name, want, got)
		}
		if !strings.ContainsAny(filter, "+#") && want != (filter == name) {
			t.Fatalf("literal filter %q vs %q: %v", filter, name, want)
		}
		if strings.HasPrefix(name, "$") && (filter[0] == '+' || filter[0] == '#') && want {
			t.Fatalf("wildcard %q matched $ topic %q", filter, name)
		}
		if !tr.Remove(filter, 1) || tr.Len() != 0 || !tr.root.empty() {
			t.Fatalf("remove %q left state", filter)
		}
	})
}
