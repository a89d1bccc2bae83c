package cmdutil

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
)

// AnnotationRenamed marks a hidden flag that is the old spelling of another (Renamed); its
// value is the new name. The flag-meaning test and the docs read it.
const AnnotationRenamed = "kop-offsets/renamed-to"

// Renamed keeps old, the former name of the flag now called name in fl, working as a hidden
// alias: it sets name's value (and marks name as changed), and the first use warns on w
// that old is deprecated. pflag's own Deprecated is not used: cobra prints its message to
// the command's output stream, stdout here, where it would corrupt -o json.
func Renamed(fl *pflag.FlagSet, w io.Writer, old, name string) {
	target := fl.Lookup(name)
	if target == nil {
		panic("cmdutil.Renamed: no flag --" + name) // a programming error
	}
	alias := &pflag.Flag{
		Name:        old,
		Usage:       fmt.Sprintf("deprecated: use --%s", name),
		Value:       &aliasValue{target: target, w: w, old: old},
		DefValue:    target.DefValue,
		NoOptDefVal: target.NoOptDefVal,
		Hidden:      true,
		Annotations: map[string][]string{AnnotationRenamed: {name}},
	}
	fl.AddFlag(alias)
}

// aliasValue is the pflag.Value of a renamed flag's old spelling.
type aliasValue struct {
	target *pflag.Flag
	w      io.Writer
	old    string
	warned bool
}

func (v *aliasValue) Set(s string) error {
	if !v.warned {
		v.warned = true
		fmt.Fprintf(v.w, "warning: --%s is deprecated and will be removed: use --%s\n", v.old, v.target.Name)
	}
	if err := v.target.Value.Set(s); err != nil {
		return err
	}
	v.target.Changed = true
	return nil
}

func (v *aliasValue) String() string { return v.target.Value.String() }
func (v *aliasValue) Type() string   { return v.target.Value.Type() }

// SinceUsage is the help of --since, the start of a time window, in every command.
const SinceUsage = "only records since this time: RFC 3339 (2025-03-04T05:06:07Z) or a duration back from now (24h, 30m)"

// ParseSince reads a --since value at now: an RFC 3339 time, or a duration back from now
// (not negative); "" is the zero time (no start). The error names the flag (a usage error,
// exit 2).
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, FlagErrorf("--since %q: neither an RFC 3339 time (2025-03-04T05:06:07Z) nor a duration (24h)", s)
	}
	if d < 0 {
		return time.Time{}, FlagErrorf("--since %s: a duration back from now must not be negative", s)
	}
	return now.Add(-d), nil
}
