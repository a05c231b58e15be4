package config

import (
	"fmt"
	"regexp"
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

// serviceLink matches the variables Kubernetes sets in every pod of a
// namespace holding a Service named "karman" (KARMAN_SERVICE_HOST,
// KARMAN_PORT, KARMAN_PORT_9876_TCP_ADDR, ...).
var serviceLink = regexp.MustCompile(`^` + EnvPrefix + `(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$`)

// ClientVars are the KARMAN_ variables the client commands (admin,
// bench) read, their credentials: a server's flags pass them without a
// warning.
var ClientVars = []string{"KARMAN_ACCESS_KEY", "KARMAN_SECRET_KEY"}

// ApplyEnv sets every flag of fs that was not given on the command line
// from its environment variable, if set. environ is in the form of
// os.Environ. A value the flag rejects is an error.
//
// Variables with the KARMAN_ prefix that name no flag are ignored: the
// platform or a wrapper script may have set them (Kubernetes service
// links, KARMAN_VERSION). ApplyEnv returns one warning for each, naming
// the nearest flag's variable when the name looks like a typo of it.
// Kubernetes service links get no warning.
func ApplyEnv(fs *pflag.FlagSet, environ []string) (warnings []string, err error) {
	known := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) { known[EnvName(f.Name)] = f })

	for _, kv := range environ {
		key, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(key, EnvPrefix) {
			continue
		}
		f, ok := known[key]
		if !ok {
			if !serviceLink.MatchString(key) && !slices.Contains(ClientVars, key) {
				warnings = append(warnings, unknownEnvWarning(key, known))
			}
			continue
		}
		if f.Changed {
			continue // the command line wins
		}
		if err := fs.Set(f.Name, val); err != nil {
			return warnings, fmt.Errorf("config: invalid value %q for %s: %w", val, key, err)
		}
	}
	slices.Sort(warnings)
	return warnings, nil
}

// unknownEnvWarning says that key names no flag and is ignored, with the
// nearest known variable when it is close enough to be a typo.
func unknownEnvWarning(key string, known map[string]*pflag.Flag) string {
	msg := fmt.Sprintf("environment variable %s names no flag and is ignored", key)
	if near := nearest(key, known); near != "" {
		msg += fmt.Sprintf("; did you mean %s (--%s)?", near, known[near].Name)
	}
	return msg
}

// nearest returns the name in known closest to key by edit distance, if
// the distance is small against the name's length, or "".
func nearest(key string, known map[string]*pflag.Flag) string {
	best, bestDist := "", 0
	for name := range known {
		d := editDistance(key[len(EnvPrefix):], name[len(EnvPrefix):])
		if best == "" || d < bestDist || d == bestDist && name < best {
			best, bestDist = name, d
		}
	}
	if best == "" || bestDist > max(2, (len(best)-len(EnvPrefix))/4) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
