// Package match is the one grammar of --group and --topic in every command: a name, or a
// glob where * matches any run of characters ("/" too: group and topic names are not
// paths), ? one character, [...] a class ([!...] or [^...] its negation) and \ escapes the
// next character.
package match

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// sep stands in for "/" on both sides of path.Match, whose * stops at "/": a byte no
// group or topic name of KoP carries.
const sep = "\x00"

// IsGlob reports whether s is a pattern rather than a name.
func IsGlob(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// Valid returns why pattern is not a valid glob, or nil.
func Valid(pattern string) error {
	if pattern == "" {
		return errors.New("empty: give a name or a glob")
	}
	if _, err := path.Match(compile(pattern), ""); err != nil {
		return fmt.Errorf("not a valid glob (an unterminated [ or a trailing \\): %w", err)
	}
	return nil
}

// Match reports whether name matches pattern; an invalid pattern matches nothing.
func Match(pattern, name string) bool {
	if !IsGlob(pattern) {
		return pattern == name
	}
	ok, _ := path.Match(compile(pattern), slashless(name))
	return ok
}

// Any reports whether any name matches any pattern; no patterns match every name.
func Any(patterns []string, names ...string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		for _, n := range names {
			if Match(p, n) {
				return true
			}
		}
	}
	return false
}

// Literal returns the one name pattern matches when it has no unescaped *, ? or [ (its
// escapes removed: `a\*b` is the name "a*b"), and false when it matches more than one.
func Literal(pattern string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*', '?', '[':
			return "", false
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
			b.WriteByte(pattern[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// Literals returns the patterns when none is a glob (the names can then be looked up
// directly, by hash), and nil otherwise.
func Literals(patterns []string) []string {
	for _, p := range patterns {
		if IsGlob(p) {
			return nil
		}
	}
	return patterns
}

func slashless(s string) string { return strings.ReplaceAll(s, "/", sep) }

// compile turns pattern into path.Match's syntax: "/" as sep, and a class's "!" negation
// as path.Match's "^".
func compile(pattern string) string {
	b := []byte(slashless(pattern))
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '[':
			if i+1 < len(b) && b[i+1] == '!' {
				b[i+1] = '^'
			}
		}
	}
	return string(b)
}
