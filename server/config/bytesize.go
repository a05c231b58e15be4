package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is a size in bytes that reads and prints with binary units:
// "4096", "64KiB", "128MiB", "1GiB". The suffixes K, M, G and T, with or
// without "iB" or "B", all mean powers of 1024, as in RocketMQ's
// configuration.
type ByteSize int64

var units = []struct {
	name  string
	shift uint
}{
	{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10},
}

// ParseByteSize reads a size such as "1024", "64k", "64KiB" or "1GB".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	suffix := strings.ToLower(strings.TrimSpace(t[len(num):]))
	var shift uint
	switch strings.TrimSuffix(strings.TrimSuffix(suffix, "b"), "i") {
	case "":
		if suffix != "" && suffix != "b" {
			return 0, fmt.Errorf("config: invalid size %q", s)
		}
	case "k":
		shift = 10
	case "m":
		shift = 20
	case "g":
		shift = 30
	case "t":
		shift = 40
	default:
		return 0, fmt.Errorf("config: invalid size %q (want a byte count such as 4096, 64KiB, 128MiB or 1GiB)", s)
	}
	if num == "" {
		return 0, fmt.Errorf("config: invalid size %q (no number)", s)
	}
	n, err := strconv.ParseUint(num, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("config: invalid size %q (want a whole number of bytes or units)", s)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("config: size %q too large", s)
	}
	return ByteSize(n << shift), nil
}

// String prints the size in the largest binary unit that divides it
// exactly, or in bytes.
func (b ByteSize) String() string {
	for _, u := range units {
		if b > 0 && b%(1<<u.shift) == 0 {
			return strconv.FormatInt(int64(b)>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10)
}

// Set implements pflag.Value.
func (b *ByteSize) Set(s string) error {
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Type implements pflag.Value.
func (b *ByteSize) Type() string { return "bytes" }
