package audit

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/reload"
)

// Why is the reason of the writes made under a context: set it with WithWhy before a plan
// is executed, and the decorators name the plan's bundle and groups in each record.
type Why struct {
	// Reason is a short sentence: what the command is doing ("reload: requested groups",
	// "repair: stale_cache rows", "watch --repair: stale_cache rows").
	Reason string
	Plan   *reload.Plan
}

type whyKey struct{}

// WithWhy returns ctx carrying w.
func WithWhy(ctx context.Context, w Why) context.Context {
	return context.WithValue(ctx, whyKey{}, w)
}

func whyOf(ctx context.Context) Why {
	w, _ := ctx.Value(whyKey{}).(Why)
	return w
}

// groupsOfBundle are the groups the plan reloads with bundle: those of the planned bundle of
// that range, or of the planned bundle it is a part of (split since the plan: the executor
// unloads the parts in its place).
func (w Why) groupsOfBundle(bundle string) []string {
	if w.Plan == nil {
		return nil
	}
	part, perr := pulsarx.ParseBundleRange(bundle)
	for _, b := range w.Plan.Bundles {
		if b.Range == bundle {
			return slices.Clone(b.Groups)
		}
		if pb, err := pulsarx.ParseBundleRange(b.Range); perr == nil && err == nil && pb.Lo <= part.Lo && part.Hi <= pb.Hi {
			return slices.Clone(b.Groups)
		}
	}
	return nil
}

// bundleOfTopic is the planned bundle holding the offsets partition topic.
func (w Why) bundleOfTopic(topic string) (string, []string) {
	if w.Plan == nil {
		return "", nil
	}
	i := strings.LastIndex(topic, "-partition-")
	if i < 0 {
		return "", nil
	}
	p, err := strconv.ParseInt(topic[i+len("-partition-"):], 10, 32)
	if err != nil {
		return "", nil
	}
	for _, b := range w.Plan.Bundles {
		if slices.Contains(b.OffsetsPartitions, int32(p)) {
			return b.Range, slices.Clone(b.Groups)
		}
	}
	return "", nil
}

func (w Why) requested() []string {
	if w.Plan == nil {
		return nil
	}
	return slices.Clone(w.Plan.RequestedGroups)
}

// Admin records the writes of a reload.BundleAdmin (UnloadBundle, LookupOwner) in Sink;
// reads pass through. A record that cannot be written is reported to OnError and does
// not fail the write (the write already happened).
type Admin struct {
	reload.BundleAdmin
	Cluster string
	Who     Who
	Sink    Sink
	OnError func(error)
	Now     func() time.Time
}

func (a Admin) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a Admin) record(r Record, start time.Time, err error) {
	r.Cluster, r.Who = a.Cluster, a.Who
	finish(&r, start, a.now(), err)
	if werr := a.Sink.Write(r); werr != nil && a.OnError != nil {
		a.OnError(werr)
	}
}

// UnloadBundle implements reload.BundleAdmin.
func (a Admin) UnloadBundle(ctx context.Context, namespace, bundleRange string) error {
	start := a.now()
	err := a.BundleAdmin.UnloadBundle(ctx, namespace, bundleRange)
	w := whyOf(ctx)
	a.record(Record{Action: ActionUnload, Namespace: namespace, Bundle: bundleRange, Reason: w.Reason,
		RequestedGroups: w.requested(), Groups: w.groupsOfBundle(bundleRange)}, start, err)
	return err
}

// LookupOwner implements reload.BundleAdmin.
func (a Admin) LookupOwner(ctx context.Context, topic string) (pulsarx.Owner, error) {
	start := a.now()
	owner, err := a.BundleAdmin.LookupOwner(ctx, topic)
	w := whyOf(ctx)
	bundle, groups := w.bundleOfTopic(topic)
	r := Record{Action: ActionLookup, Topic: topic, Bundle: bundle, Reason: w.Reason,
		RequestedGroups: w.requested(), Groups: groups}
	if err == nil {
		r.Owner = owner.BrokerURL
	}
	a.record(r, start, err)
	return owner, err
}
