package filter

import "testing"

func TestParseTags(t *testing.T) {
	tests := []struct {
		expr    string
		all     bool
		tags    []string
		wantErr bool
	}{
		{expr: "", all: true},
		{expr: "*", all: true},
		{expr: "  *  ", all: true},
		{expr: "A", tags: []string{"A"}},
		{expr: "A || B ||C", tags: []string{"A", "B", "C"}},
		{expr: "A || * ", all: true},
		{expr: "A ||  || B", tags: []string{"A", "B"}},
		{expr: "||", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseTags(tt.expr)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseTags(%q) succeeded, want an error", tt.expr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseTags(%q): %v", tt.expr, err)
		}
		if got.All() != tt.all || len(got.List()) != len(tt.tags) {
			t.Fatalf("ParseTags(%q) = all %v tags %v, want all %v tags %v", tt.expr, got.All(), got.List(), tt.all, tt.tags)
		}
		for i, tag := range tt.tags {
			if got.List()[i] != tag {
				t.Errorf("ParseTags(%q) tag %d = %q, want %q", tt.expr, i, got.List()[i], tag)
			}
		}
	}
}

func TestTagsMatch(t *testing.T) {
	f, err := ParseTags("TagA || TagB")
	if err != nil {
		t.Fatal(err)
	}
	for tag, want := range map[string]bool{"TagA": true, "TagB": true, "TagC": false, "": false, "taga": false} {
		if got := f.MatchTag([]byte(tag)); got != want {
			t.Errorf("MatchTag(%q) = %v, want %v", tag, got, want)
		}
		if want && !f.MatchTagHash(TagHash(tag)) {
			t.Errorf("MatchTagHash(hash of %q) = false, want true", tag)
		}
	}
}

func TestTagHashIsJavaHashCode(t *testing.T) {
	// Values of String.hashCode in Java.
	for tag, want := range map[string]int64{"": 0, "a": 97, "TagA": 2598919, "hello world": 1794106052} {
		if got := TagHash(tag); got != want {
			t.Errorf("TagHash(%q) = %d, want %d", tag, got, want)
		}
	}
}
