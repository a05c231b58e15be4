package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/pflag"
)

// secretAnnotation marks the flags whose values are secrets (MarkSecret).
const secretAnnotation = "karman:secret"

// Redacted is what Print shows of a secret flag that is set.
const Redacted = "[redacted]"

// MarkSecret marks the flag name of fs as holding a secret: Print (and
// Shown) show it as Redacted. It panics when fs has no such flag.
func MarkSecret(fs *pflag.FlagSet, name string) {
	if err := fs.SetAnnotation(name, secretAnnotation, []string{"true"}); err != nil {
		panic(err)
	}
}

// Shown returns the value of f as it may be shown: Redacted for a secret
// that is set.
func Shown(f *pflag.Flag) string {
	s := f.Value.String()
	if _, secret := f.Annotations[secretAnnotation]; secret && s != "" {
		return Redacted
	}
	return s
}

// Print writes the value of every flag of fs to w, sorted by name, as one
// JSON object (format "json") or as name=value lines (format "kv"). In
// JSON, sizes and counts are numbers, switches are booleans and the rest
// (durations, addresses, levels) are strings.
func Print(w io.Writer, fs *pflag.FlagSet, format string) error {
	var b bytes.Buffer
	switch format {
	case "json":
		b.WriteString("{\n")
		first := true
		var err error
		fs.VisitAll(func(f *pflag.Flag) {
			if err != nil {
				return
			}
			var v []byte
			v, err = json.Marshal(jsonValue(f))
			if !first {
				b.WriteString(",\n")
			}
			first = false
			k, _ := json.Marshal(f.Name)
			fmt.Fprintf(&b, "  %s: %s", k, v)
		})
		if err != nil {
			return fmt.Errorf("config: %w", err)
		}
		b.WriteString("\n}\n")
	case "kv":
		fs.VisitAll(func(f *pflag.Flag) {
			fmt.Fprintf(&b, "%s=%s\n", f.Name, Shown(f))
		})
	default:
		return fmt.Errorf("config: unknown format %q (want json or kv)", format)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// jsonValue returns the flag's value as the JSON type that fits it.
func jsonValue(f *pflag.Flag) any {
	s := Shown(f)
	if s == Redacted {
		return s
	}
	switch v := f.Value.(type) {
	case *ByteSize:
		return int64(*v)
	}
	switch f.Value.Type() {
	case "bool":
		if b, err := strconv.ParseBool(s); err == nil {
			return b
		}
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return json.Number(s)
	}
	return s
}
