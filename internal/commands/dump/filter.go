package dump

import (
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/offsetlog"
)

func kindNames() string {
	s := make([]string, len(offsetlog.Kinds))
	for i, k := range offsetlog.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// validate checks the flags and prepares the filters (exit 2 on failure).
func (o *Options) validate(since string, now time.Time) error {
	for _, p := range o.Partitions {
		if p < 0 {
			return cmdutil.FlagErrorf("--partition %d: must not be negative", p)
		}
	}
	if o.Concurrency < 1 {
		return cmdutil.FlagErrorf("--concurrency must be at least 1, got %d", o.Concurrency)
	}
	if o.Limit < 0 {
		return cmdutil.FlagErrorf("--limit must not be negative, got %d", o.Limit)
	}
	if err := cmdutil.MutuallyExclusive("--follow cannot be combined with --compacted (the live state needs the end of the topic)", o.Follow, o.Compacted); err != nil {
		return err
	}
	t, err := cmdutil.ParseSince(since, now)
	if err != nil {
		return err
	}
	o.From = t
	o.kinds = nil
	for _, k := range o.Kinds {
		k = strings.ToLower(strings.TrimSpace(k))
		if !slices.Contains(offsetlog.Kinds, offsetlog.Kind(k)) {
			return cmdutil.FlagErrorf("--kind %q: valid kinds are %s", k, kindNames())
		}
		if o.kinds == nil {
			o.kinds = map[offsetlog.Kind]bool{}
		}
		o.kinds[offsetlog.Kind(k)] = true
	}
	return nil
}

// readPartitions returns the partitions to read on a cluster with n partitions.
func (o *Options) readPartitions(cluster string, n int32) ([]int32, error) {
	var out []int32
	switch {
	case len(o.Partitions) > 0:
		for _, p := range o.Partitions {
			if int32(p) >= n {
				return nil, cmdutil.UsageErrorf("cluster %s: --partition %d: the offsets topic has %d partitions (0..%d)", cluster, p, n, n-1)
			}
			out = append(out, int32(p))
		}
	case match.Literals(o.Groups) != nil:
		for _, g := range o.Groups {
			out = append(out, loader.PartitionFor(g, n))
		}
	default:
		for p := range n {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// keep reports whether the filters select rec.
func (o *Options) keep(rec *offsetlog.Record, kafkaNS string) bool {
	if o.kinds != nil && !o.kinds[rec.Kind] {
		return false
	}
	if rec.Kind == offsetlog.KindUndecodable {
		return true
	}
	if !match.Any(o.Groups, rec.Group) {
		return false
	}
	if len(o.Topics) > 0 {
		if rec.Topic == "" {
			return false
		}
		// A name in any of its spellings; a glob against the short and the full name, as
		// check and repair match topics.
		t := loader.NormalizeTopic(rec.Topic, kafkaNS)
		if !slices.ContainsFunc(o.Topics, func(s string) bool {
			if match.IsGlob(s) {
				return match.Any([]string{s}, loader.ShortName(t, kafkaNS), t)
			}
			return loader.NormalizeTopic(s, kafkaNS) == t
		}) {
			return false
		}
	}
	return true
}
