package reload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// BundleAdmin is the part of one cluster's admin REST API reload uses; *pulsarx.Admin
// implements it. Errors should match pulsarx.ErrNotFound / pulsarx.ErrUnreachable.
type BundleAdmin interface {
	// OffsetsTopicPartitions is the partition count of <tenant>/<ns>/__consumer_offsets.
	OffsetsTopicPartitions(ctx context.Context, tenant, namespace string) (int32, error)
	// Bundles lists the bundles of a namespace, sorted by range. Reading them does not
	// make a broker take any bundle.
	Bundles(ctx context.Context, namespace string) ([]pulsarx.Bundle, error)
	// UnloadBundle unloads one bundle (WRITE).
	UnloadBundle(ctx context.Context, namespace, bundleRange string) error
	// LookupOwner looks a topic up; when no broker owns its bundle one takes it (the load
	// trigger).
	LookupOwner(ctx context.Context, topic string) (pulsarx.Owner, error)
}

var _ BundleAdmin = (*pulsarx.Admin)(nil)

// Request says what to reload on one cluster.
type Request struct {
	Groups     []string // consumer groups; each names the offsets partition it lives in
	Partitions []int32  // offsets partitions
}

// ClusterRef is what the plan needs to know about the cluster it writes to.
type ClusterRef struct {
	Name              string
	Tenant            string // default "public"
	MetadataNamespace string // default "__kafka"
	KafkaNamespace    string // for topic-name normalisation, default "public/default"
}

// Namespace is "<tenant>/<metadataNamespace>".
func (c ClusterRef) Namespace() string { return c.Tenant + "/" + c.MetadataNamespace }

// OffsetsTopic is the full name of the offsets topic.
func (c ClusterRef) OffsetsTopic() string {
	return pulsarx.OffsetsTopic(c.Tenant, c.MetadataNamespace)
}

// PartitionTopic is the full name of one offsets partition.
func (c ClusterRef) PartitionTopic(p int32) string {
	return pulsarx.PartitionTopic(c.OffsetsTopic(), p)
}

func (c ClusterRef) withDefaults() ClusterRef {
	if c.Tenant == "" {
		c.Tenant = "public"
	}
	if c.MetadataNamespace == "" {
		c.MetadataNamespace = "__kafka"
	}
	if c.KafkaNamespace == "" {
		c.KafkaNamespace = loader.DefaultKafkaNamespace
	}
	return c
}

// Planner builds Plans for one cluster.
type Planner struct {
	Cluster ClusterRef
	Admin   BundleAdmin
	// Reader reads this cluster's offsets topic (non-durable); the replay of the bundles'
	// partitions gives the affected groups and their persisted offsets.
	Reader loader.OffsetTopicReader
	// Describers maps every cluster name (this one and the others) to its KoP listeners; a
	// nil value means the cluster has no kafkaBootstrap: its groups are unknown there.
	Describers map[string]GroupDescriber
	// AllowActive lets bundles with groups of unknown activity here be reloaded (and live
	// ones under RefuseLive).
	AllowActive bool
	// RefuseLive refuses, unless AllowActive, bundles with groups live on this cluster. By
	// default they are reloaded: an unload pauses their members, and their own commits are
	// never counted as a loss (live.go; docs/reload.md "Live groups").
	RefuseLive bool
	// Fetcher asks this cluster's KoP what it serves now, to compare with what a load
	// brings; nil when the cluster has no kafkaBootstrap (every bundle with groups is then
	// refused unless AcceptLoss: nothing proves the reload loses nothing).
	Fetcher OffsetFetcher
	// AcceptLoss lets bundles be reloaded where KoP would then serve older offsets or none.
	AcceptLoss bool
	// Ordering is the replay's transactional ordering (default: KoP's).
	Ordering loader.TxnOrdering
	// Aligner translates offsets replicated from other clusters into this cluster's
	// numbering; nil: every replicated value is of unknown alignment (refused unless
	// AcceptLoss).
	Aligner Aligner
	// Intended are rows the caller rewrote on purpose (failover) with the value it wrote.
	Intended map[IntendedKey]int64
	// Persisted, when set, replays this cluster's offsets topic instead of Reader, with the
	// same Ordering: a caller that read the topic earlier in the run hands its replay on
	// (failover: a loader.Snapshot), and each read of the plan reads what was appended since.
	Persisted PartitionReplayer
}

// PlanError is a failure while planning: an endpoint failed, nothing was written.
type PlanError struct {
	Cluster string
	Step    string
	Err     error
}

func (e *PlanError) Error() string {
	if _, ok := errors.AsType[*pulsarx.AdminError](e.Err); ok {
		// The admin API's error names the call and its object: the step would say them twice.
		return fmt.Sprintf("cluster %s: plan: %s", e.Cluster, pulsarx.TrimCluster(e.Err, e.Cluster))
	}
	return fmt.Sprintf("cluster %s: plan: %s: %v", e.Cluster, e.Step, e.Err)
}

func (e *PlanError) Unwrap() error { return e.Err }

// ErrBadRequest is wrapped when the request names nothing usable (e.g. an offsets
// partition beyond the partition count).
var ErrBadRequest = errors.New("bad reload request")

// Plan builds the plan of req. Nothing is written: the admin calls are the partitioned
// metadata of the offsets topic and the namespace policies (bundles), neither of which makes
// a broker take a bundle; the offsets topic is read with non-durable readers.
func (p *Planner) Plan(ctx context.Context, req Request) (*Plan, error) {
	cl := p.Cluster.withDefaults()
	r := &planRun{p: p, cl: cl, plan: &Plan{
		Cluster: cl.Name, Namespace: cl.Namespace(), OffsetsTopic: cl.OffsetsTopic(),
		AllowActive: p.AllowActive, RefuseLive: p.RefuseLive, AcceptLoss: p.AcceptLoss, Bundles: []PlannedBundle{}, Groups: []AffectedGroup{},
		kafkaNamespace: cl.KafkaNamespace, partTopic: cl.PartitionTopic, intended: p.Intended,
		RequestedGroups: sortedUnique(req.Groups), RequestedPartitions: sortedUnique(req.Partitions),
		Clusters: slices.Sorted(maps.Keys(p.Describers)),
	}}
	if err := r.selectBundles(ctx); err != nil {
		return nil, err
	}
	if err := r.readGroups(ctx); err != nil {
		return nil, err
	}
	activity := r.askKoP(ctx)
	r.rereadAhead(ctx)
	for _, f := range r.persisted.LoadFailures() {
		if pb := r.byRange[r.bundleOf[f.Partition].Range]; pb != nil {
			pb.LoadFailures = append(pb.LoadFailures, f)
		}
	}
	for _, name := range r.names {
		r.addGroup(name, activity)
	}
	r.addSkips(ctx)
	for i := range r.plan.Bundles {
		r.decide(&r.plan.Bundles[i])
	}
	return r.plan, nil
}

// planRun is the working state of one Plan call.
type planRun struct {
	p    *Planner
	cl   ClusterRef
	plan *Plan
	n    int32 // offsets partitions

	bundleOf       map[int32]pulsarx.Bundle  // every offsets partition's bundle
	byRange        map[string]*PlannedBundle // the planned bundles
	parts          []int32                   // their offsets partitions
	requestedGroup map[string]int32          // requested group -> its offsets partition

	persisted *loader.PersistedOffsets
	groups    map[string]*AffectedGroup
	names     []string                // sorted keys of groups
	served    map[string]*CacheAnswer // nil: no Fetcher
}

// selectBundles reads the partition count and the bundles and plans every bundle holding a
// requested group or partition.
func (r *planRun) selectBundles(ctx context.Context) error {
	cl, plan := r.cl, r.plan
	n, err := r.p.Admin.OffsetsTopicPartitions(ctx, cl.Tenant, cl.MetadataNamespace)
	if err != nil {
		return &PlanError{Cluster: cl.Name, Step: "partition count of " + cl.OffsetsTopic(), Err: err}
	}
	r.n, plan.OffsetsPartitions = n, n
	for _, part := range plan.RequestedPartitions {
		if part < 0 || part >= n {
			return fmt.Errorf("cluster %s: offsets partition %d does not exist (%s has %d partitions): %w",
				cl.Name, part, cl.OffsetsTopic(), n, ErrBadRequest)
		}
	}
	bundles, err := r.p.Admin.Bundles(ctx, cl.Namespace())
	if err != nil {
		return &PlanError{Cluster: cl.Name, Step: "bundles of " + cl.Namespace(), Err: err}
	}
	// Every offsets partition -> its bundle (Pulsar's CRC-32 placement, as the broker does).
	r.bundleOf = make(map[int32]pulsarx.Bundle, n)
	for part := range n {
		b, err := pulsarx.FindBundle(bundles, cl.PartitionTopic(part))
		if err != nil {
			return &PlanError{Cluster: cl.Name, Step: "bundle of offsets partition", Err: err}
		}
		r.bundleOf[part] = b
	}
	if err := r.expandPatterns(ctx); err != nil {
		return err
	}
	r.requestedGroup = map[string]int32{}
	selected := map[string]bool{} // bundle ranges
	for _, g := range plan.RequestedGroups {
		part := loader.PartitionFor(g, n)
		r.requestedGroup[g] = part
		selected[r.bundleOf[part].Range] = true
	}
	for _, part := range plan.RequestedPartitions {
		selected[r.bundleOf[part].Range] = true
	}
	for _, b := range bundles {
		if selected[b.Range] {
			plan.Bundles = append(plan.Bundles, PlannedBundle{Range: b.Range, OffsetsPartitions: []int32{}, Groups: []string{}, Active: []string{}, Losses: []Loss{}})
		}
	}
	r.byRange = map[string]*PlannedBundle{}
	for i := range plan.Bundles {
		r.byRange[plan.Bundles[i].Range] = &plan.Bundles[i]
	}
	for part := range n {
		if pb := r.byRange[r.bundleOf[part].Range]; pb != nil {
			pb.OffsetsPartitions = append(pb.OffsetsPartitions, part)
			r.parts = append(r.parts, part)
		}
	}
	return nil
}

// expandPatterns replaces requested globs with the persisted groups they match (a glob has no
// one offsets partition to hash to, so every partition is replayed once for it); a glob that
// matches no persisted group is a bad request, named with the cluster.
func (r *planRun) expandPatterns(ctx context.Context) error {
	plan := r.plan
	if match.Literals(plan.RequestedGroups) != nil || len(plan.RequestedGroups) == 0 {
		return nil
	}
	all := make([]int32, r.n)
	for i := range all {
		all[i] = int32(i)
	}
	persisted, err := r.p.replay(ctx, all)
	if err != nil {
		return &PlanError{Cluster: r.cl.Name, Step: "read " + r.cl.OffsetsTopic() + " for the groups matching " + strings.Join(plan.RequestedGroups, ", "), Err: err}
	}
	var names []string
	for _, g := range persisted.Groups() {
		names = append(names, g.Group)
	}
	var requested []string
	for _, pat := range plan.RequestedGroups {
		if !match.IsGlob(pat) {
			requested = append(requested, pat)
			continue
		}
		n := 0
		for _, name := range names {
			if match.Match(pat, name) {
				requested, n = append(requested, name), n+1
			}
		}
		if n == 0 {
			return fmt.Errorf("cluster %s: --group %q matches no group persisted in %s (list them with: kop-offsets groups --cluster %s): %w",
				r.cl.Name, pat, r.cl.OffsetsTopic(), r.cl.Name, ErrBadRequest)
		}
	}
	plan.Patterns = plan.RequestedGroups
	plan.RequestedGroups = sortedUnique(requested)
	return nil
}

// readGroups replays the planned partitions: the blast radius is every group persisted in
// them, plus the requested groups.
func (r *planRun) readGroups(ctx context.Context) error {
	persisted, err := r.p.replay(ctx, r.parts)
	if err != nil {
		return &PlanError{Cluster: r.cl.Name, Step: "read " + r.cl.OffsetsTopic(), Err: err}
	}
	r.persisted = persisted
	r.groups = map[string]*AffectedGroup{}
	for _, g := range persisted.Groups() {
		r.groups[g.Group] = &AffectedGroup{Group: g.Group, OffsetsPartition: g.OffsetsPartition}
	}
	for g, part := range r.requestedGroup {
		if r.groups[g] == nil {
			r.groups[g] = &AffectedGroup{Group: g, OffsetsPartition: part}
		}
		r.groups[g].Requested = true
	}
	r.names = slices.Sorted(maps.Keys(r.groups))
	return nil
}

// askKoP asks every cluster's KoP about the groups' activity and this one's what it serves
// (r.served), and returns the activity by cluster and group.
func (r *planRun) askKoP(ctx context.Context) map[string]map[string]Activity {
	// An offsets partition KoP does not serve here answers every group of it with
	// NOT_COORDINATOR or loading only after each one's timeout: one probe per partition says
	// it for all of them (thousands of groups would otherwise wait one by one).
	var unserved map[int32]*CacheAnswer
	if r.p.Fetcher != nil {
		unserved = probeUnserved(ctx, r.p.Fetcher, r.parts, r.n)
	}
	var asked, inUnserved []string
	for _, name := range r.names {
		if unserved[r.groups[name].OffsetsPartition] != nil {
			inUnserved = append(inUnserved, name)
		} else {
			asked = append(asked, name)
		}
	}
	activity := describeAll(ctx, r.p.Describers, r.names, r.cl.Name, inUnserved)
	if r.p.Fetcher != nil {
		r.served = fetchServed(ctx, r.p.Fetcher, asked)
		for _, name := range inUnserved {
			r.served[name] = unserved[r.groups[name].OffsetsPartition]
		}
	}
	return activity
}

// addGroup completes group name (bundle, persisted and served offsets, losses, activity) and
// adds it to its bundle and to the plan.
func (r *planRun) addGroup(name string, activity map[string]map[string]Activity) {
	cl, n := r.cl, r.n
	g := r.groups[name]
	g.Bundle = r.bundleOf[g.OffsetsPartition].Range
	g.Persisted = predictedOffsets(r.persisted, name, n, cl.KafkaNamespace)
	pb := r.byRange[g.Bundle]
	switch {
	case r.served != nil:
		g.Served = r.served[name]
		for _, l := range losses(*g, g.Served, func(topic string, part int32) string {
			return lossReason(r.persisted, name, loader.NormalizeTopic(topic, cl.KafkaNamespace), part, n)
		}) {
			if !r.plan.isIntended(l.Group, l.Topic, l.Partition, l.Predicted) {
				pb.Losses = append(pb.Losses, l)
			}
		}
	case len(g.Persisted) > 0 || g.Requested:
		pb.Losses = append(pb.Losses, Loss{Group: name, Unknown: true, Requested: g.Requested,
			Error: "the cluster has no kafkaBootstrap: what KoP serves cannot be compared with what a load brings"})
	}
	g.Activity = map[string]Activity{}
	for _, c := range r.plan.Clusters {
		g.Activity[c] = activity[c][name]
	}
	g.Status = summarize(g.Activity)
	g.Here = g.Activity[cl.Name].Status
	if g.Here == "" {
		g.Here = ActivityUnknown // no describer for this cluster
	}
	if g.Here == ActivityUnknown && g.Served != nil && g.Served.ErrorKind == ErrorKindCoordinator {
		g.Here = ActivityUnserved
		a := g.Activity[cl.Name]
		a.Status = ActivityUnserved
		g.Activity[cl.Name] = a
	}
	pb.Groups = append(pb.Groups, name)
	switch {
	case g.Here != ActivityIdle && g.Here != ActivityUnserved:
		pb.Active = append(pb.Active, name)
	case g.Status == ActivityLive:
		pb.LiveElsewhere = append(pb.LiveElsewhere, name)
	}
	r.plan.Groups = append(r.plan.Groups, *g)
}

// addSkips adds the rows a reload would make KoP serve past the group's position here.
func (r *planRun) addSkips(ctx context.Context) {
	var affected []*AffectedGroup
	for _, name := range r.names {
		affected = append(affected, r.groups[name])
	}
	aligner := r.p.Aligner
	if unreachable(r.served) {
		// KoP here did not answer at all: reading the copies through it would only wait for
		// the same failure once per topic. The skips stay unknown (refused).
		aligner = nil
	}
	for g, ss := range skips(ctx, aligner, r.cl.Name, affected) {
		pb := r.byRange[r.groups[g].Bundle]
		for _, s := range ss {
			if !r.plan.isIntended(s.Group, s.Topic, s.Partition, &s.Predicted) {
				pb.Skips = append(pb.Skips, s)
			}
		}
	}
}

// decide refuses pb when it has active groups, losses or skips that were not allowed.
func (r *planRun) decide(pb *PlannedBundle) {
	slices.SortFunc(pb.Skips, func(a, b Skip) int { return strings.Compare(a.Group+"\x00"+a.Topic, b.Group+"\x00"+b.Topic) })
	var reasons []string
	if !r.p.AllowActive {
		if why := refusal(r.plan, pb, r.p.RefuseLive); why != "" {
			reasons = append(reasons, why)
		}
	}
	if len(pb.Losses) > 0 && !r.p.AcceptLoss {
		reasons = append(reasons, lossRefusal(pb.Losses))
	}
	if len(pb.Skips) > 0 && !r.p.AcceptLoss {
		reasons = append(reasons, skipRefusal(pb.Skips))
	}
	if len(reasons) > 0 {
		pb.Refused = true
		pb.Reason = strings.Join(reasons, "; and ")
	}
}

// refusal is why pb's activity refuses it ("" when it does not): groups whose activity here
// is unknown, and, with refuseLive, groups live here.
func refusal(plan *Plan, pb *PlannedBundle, refuseLive bool) string {
	var live, unknown []string
	for _, g := range plan.Groups {
		if g.Bundle != pb.Range {
			continue
		}
		switch g.Here {
		case ActivityLive:
			if refuseLive {
				live = append(live, g.Group+"@"+plan.Cluster)
			}
		case ActivityUnknown:
			unknown = append(unknown, g.Group+"@"+plan.Cluster)
		}
	}
	var parts []string
	if len(live) > 0 {
		parts = append(parts, "live members (--refuse-live): "+strings.Join(live, ", "))
	}
	if len(unknown) > 0 {
		parts = append(parts, "not proven idle (KoP did not answer): "+strings.Join(unknown, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "; --allow-active reloads it anyway"
}

// replay reads and replays the given partitions of the offsets topic, replayConcurrency at
// once.
func replay(ctx context.Context, r loader.OffsetTopicReader, parts []int32, ord loader.TxnOrdering) (*loader.PersistedOffsets, error) {
	results := make([]*loader.PersistedOffsets, len(parts))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(replayConcurrency)
	for i, part := range parts {
		eg.Go(func() error {
			po, err := loader.ReplayPartition(ctx, r, part, ord)
			if err != nil {
				return fmt.Errorf("offsets partition %d: %w", part, err)
			}
			results[i] = po
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return loader.Merge(results...), nil
}

// replayConcurrency is how many offsets partitions a plan or a verification reads at once
// (check's default --concurrency).
const replayConcurrency = 4

func sortedUnique[T interface{ ~string | ~int32 }](in []T) []T {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
