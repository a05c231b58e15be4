package karmancmd

import (
	"strings"
	"testing"
)

func TestSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for no suggestion at all
	}{
		{[]string{"admin", "topic", "lst"}, "Did you mean this?\n\tlist\n"},
		{[]string{"admin", "topik"}, "Did you mean this?\n\ttopic\n"},
		{[]string{"admin", "brokr", "config"}, "Did you mean this?\n\tbroker\n"},
		{[]string{"admin", "message", "snd", "x"}, "Did you mean this?\n\tsend\n"},
		{[]string{"bench", "engin"}, "Did you mean this?\n\tengine\n"},
		{[]string{"serv"}, "Did you mean this?\n\tserve\n"},
		{[]string{"admin", "--nmaesrv", "x", "topic", "list"}, "unknown flag: --nmaesrv\n\nDid you mean this?\n\t--namesrv\n"},
		{[]string{"admin", "topic", "list", "--al"}, "Did you mean this?\n\t--all\n"},
		{[]string{"admin", "message", "browse", "t", "--queu", "1"}, "Did you mean this?\n\t--queue\n"},
		{[]string{"admin", "topic", "zzzzzz"}, ""},
		{[]string{"admin", "topic", "list", "--zzzzzz"}, ""},
	} {
		_, err := runRoot(t, tc.args...)
		if err == nil {
			t.Errorf("%s: no error", strings.Join(tc.args, " "))
			continue
		}
		msg := err.Error()
		if tc.want == "" {
			if strings.Contains(msg, "Did you mean") || !strings.Contains(msg, "--help' for usage") {
				t.Errorf("%s: %q, want no suggestion and a pointer to --help", strings.Join(tc.args, " "), msg)
			}
			continue
		}
		if !strings.Contains(msg, tc.want) && !strings.Contains(msg+"\n", tc.want) {
			t.Errorf("%s: %q, want it to contain %q", strings.Join(tc.args, " "), msg, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"list", "list", 0}, {"lst", "list", 1}, {"LIST", "list", 0},
		{"nmaesrv", "namesrv", 2}, {"abc", "", 3}, {"kitten", "sitting", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "# bash completion V2 for karman",
		"zsh":  "#compdef karman",
		"fish": "# fish completion for karman",
	} {
		out, err := runRoot(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("completion %s: %v, output starts %q", shell, err, out[:min(len(out), 80)])
		}
	}
	if _, err := runRoot(t, "completion", "tcsh"); err == nil {
		t.Errorf("completion tcsh succeeded")
	}
	// The completion of commands works through cobra's __complete.
	out, err := runRoot(t, "__complete", "admin", "top")
	if err != nil || !strings.Contains(out, "topic") {
		t.Errorf("__complete admin top: %v\n%s", err, out)
	}
}
