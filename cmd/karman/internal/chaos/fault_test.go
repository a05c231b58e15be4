package chaos

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckFault(t *testing.T) {
	cases := []struct {
		fault string
		netns bool
		want  error
	}{
		{"kill-master", false, nil},
		{"truncate-replica", true, nil},
		{"partition-master", true, nil},
		{"partition-master", false, ErrNoNetns},
		{"delay-replication", false, nil},
		{"lossy-replication", true, nil},
		{"kill-everything", true, ErrUnknownFault},
		{"", false, ErrUnknownFault},
	}
	for _, c := range cases {
		err := CheckFault(c.fault, c.netns)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("CheckFault(%q, %v) = %v, want %v", c.fault, c.netns, err, c.want)
		}
	}
}

// truncateTail zeroes the tail of the last segment's written bytes and
// removes the checkpoint; the earlier segment and the hole stay.
func TestTruncateTail(t *testing.T) {
	dir := t.TempDir()
	first := bytes.Repeat([]byte{1}, 4096)
	last := append(bytes.Repeat([]byte{2}, 100_000), make([]byte, 50_000)...)
	for name, data := range map[string][]byte{
		"00000000000000000000": first,
		"00000000000067108864": last,
		"00000000000134217728": make([]byte, 8192), // made ahead, not written
		"checkpoint":           {9},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := truncateTail(dir, TruncateBytes)
	if err != nil || n != TruncateBytes {
		t.Fatalf("truncateTail = %d, %v; want %d", n, err, TruncateBytes)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "00000000000067108864"))
	if len(got) != len(last) || len(bytes.TrimRight(got, "\x00")) != 100_000-TruncateBytes {
		t.Errorf("the last segment keeps %d bytes of its %d, want %d", len(bytes.TrimRight(got, "\x00")), len(got), 100_000-TruncateBytes)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000")); !bytes.Equal(got, first) {
		t.Error("the first segment changed")
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the checkpoint is still there: %v", err)
	}
	if _, err := truncateTail(t.TempDir(), TruncateBytes); err == nil {
		t.Error("truncateTail of an empty directory did not fail")
	}
	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "00000000000000000000"), make([]byte, 4096), 0o644)
	if _, err := truncateTail(empty, TruncateBytes); err == nil {
		t.Error("truncateTail of a log with nothing written did not fail")
	}
}
