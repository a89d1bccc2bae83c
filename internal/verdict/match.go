package verdict

import (
	"path"
	"strings"
)

// IsGlob reports whether a --group/--topic value is a pattern rather than a name.
func IsGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// MatchAny reports whether any name matches any glob (path.Match); no globs match all.
// check, repair and watch scope groups and topics with it.
func MatchAny(globs []string, names ...string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		for _, n := range names {
			if ok, _ := path.Match(g, n); ok {
				return true
			}
		}
	}
	return false
}
