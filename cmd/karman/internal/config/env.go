package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// EnvPrefix starts the name of every environment variable karman reads.
const EnvPrefix = "KARMAN_"

// EnvName returns the environment variable that sets the flag name:
// "http-addr" gives "KARMAN_HTTP_ADDR".
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// ApplyEnv sets every flag of fs that was not given on the command line
// from its environment variable, if set. environ is in the form of
// os.Environ. Variables with the KARMAN_ prefix that name no flag of fs are
// an error naming all of them; so is a value the flag rejects.
func ApplyEnv(fs *pflag.FlagSet, environ []string) error {
	known := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) { known[EnvName(f.Name)] = f })

	var unknown []string
	for _, kv := range environ {
		key, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(key, EnvPrefix) {
			continue
		}
		f, ok := known[key]
		if !ok {
			unknown = append(unknown, key)
			continue
		}
		if f.Changed {
			continue // the command line wins
		}
		if err := fs.Set(f.Name, val); err != nil {
			return fmt.Errorf("config: invalid value %q for %s: %w", val, key, err)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		names := make([]string, 0, len(known))
		for k := range known {
			names = append(names, k)
		}
		slices.Sort(names)
		noun := "variable"
		if len(unknown) > 1 {
			noun = "variables"
		}
		return fmt.Errorf("config: unknown environment %s %s (known: %s)",
			noun, strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	return nil
}
