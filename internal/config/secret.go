package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// RedactedValue replaces literal secrets in printed configs.
const RedactedValue = "<redacted>"

// Secret is a secret value as written in the config: a literal, "env:NAME" (the value of
// an environment variable) or "file:PATH" (a file's content without surrounding
// whitespace). It is resolved only by Resolve, when a connection is made.
type Secret string

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsZero reports whether no secret is set.
func (s Secret) IsZero() bool { return s == "" }

// IsReference reports whether s is an env: or file: reference.
func (s Secret) IsReference() bool {
	return strings.HasPrefix(string(s), "env:") || strings.HasPrefix(string(s), "file:")
}

// String never returns the secret: it returns what Redacted does.
func (s Secret) String() string { return string(s.Redacted()) }

// GoString never returns the secret either (for %#v).
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", string(s.Redacted())) }

// Redacted returns s when it is empty or a reference, and RedactedValue for a literal.
func (s Secret) Redacted() Secret {
	if s == "" || s.IsReference() {
		return s
	}
	return RedactedValue
}

// Check validates the syntax of a reference without resolving it.
// A value holding RedactedValue was copied from `config view`: it would be sent as the
// secret, so it is refused here, before anything is contacted.
func (s Secret) Check() error {
	switch {
	case strings.Contains(string(s), RedactedValue):
		return fmt.Errorf("reads %q, as `config view` prints a literal secret: put the secret itself back, or a reference (env:NAME, file:PATH)", string(s))
	case strings.HasPrefix(string(s), "env:"):
		name := strings.TrimPrefix(string(s), "env:")
		if !envNameRE.MatchString(name) {
			return fmt.Errorf("invalid secret reference %q: env: needs a variable name", string(s))
		}
	case strings.HasPrefix(string(s), "file:"):
		if strings.TrimSpace(strings.TrimPrefix(string(s), "file:")) == "" {
			return fmt.Errorf("invalid secret reference %q: file: needs a path", string(s))
		}
	}
	return nil
}

// Resolve returns the secret value. An unset or empty variable, an unreadable or empty file
// is an error; the error never contains the value.
func (s Secret) Resolve() (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(string(s), "env:"):
		name := strings.TrimPrefix(string(s), "env:")
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		if v == "" {
			return "", fmt.Errorf("environment variable %s is empty", name)
		}
		return v, nil
	case strings.HasPrefix(string(s), "file:"):
		path := strings.TrimSpace(strings.TrimPrefix(string(s), "file:"))
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read secret file: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return "", fmt.Errorf("secret file %s is empty", path)
		}
		return v, nil
	default:
		return string(s), nil
	}
}
