// Package failover lands consumer groups on the target cluster at the translated offset:
// the first message each group has not consumed on the source (package align), so a group
// moved from one cluster to the other neither skips nor needlessly re-reads.
//
// The mechanism (docs/failover.md): the translated offset is written into the target's
// offsets topic in KoP's own record format with replication disabled, so it never reaches
// the source (whose KoP would otherwise load the target's number at its next load), and the
// target's bundle is then reloaded (package reload: plan, never-worse guard, verification),
// so KoP on the target serves it. The source keeps serving its own offset.
package failover

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/match"
	"github.com/kop-offsets/kop-offsets/internal/reload"
	"github.com/kop-offsets/kop-offsets/internal/survey"
)

// Side is what failover reads of one cluster.
type Side struct {
	Name           string
	KafkaNamespace string
	Reader         loader.OffsetTopicReader
	// Groups asks the cluster's KoP (activity, what it serves); nil: no kafkaBootstrap.
	Groups interface {
		reload.GroupDescriber
		reload.OffsetFetcher
	}
	// Copies reads the cluster's copies of the data topics (their log start, for a landing
	// at the earliest position when the source is gone); nil: no kafkaBootstrap.
	Copies align.Source
}

// Backlog is the replication backlog of the source's offsets partitions toward the target.
type Backlog interface {
	// Backlog returns the entries of offsets partition p the source has not yet replicated
	// to the target.
	Backlog(ctx context.Context, p int32) (int64, error)
}

// Planner builds the Plan of a failover from one cluster to another.
type Planner struct {
	From, To Side
	Backlog  Backlog
	Aligner  reload.Aligner
	// AcceptLoss writes the translated offset even where the target's own newer commit
	// would be replaced; with the source gone, it lands rows on a safe position older than
	// what KoP serves.
	AcceptLoss bool
	// SourceDown is why From did not answer: the plan then lands each group on the
	// translation kept on the target (planKept) and reads nothing of From.
	SourceDown error
	Now        func() time.Time
}

// Scope selects groups and topics (globs, as in check); none: every group written on From.
type Scope struct {
	Groups []string
	Topics []string
}

// Row is one group/topic/partition.
type Row struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Source is the group's committed offset on From (written there).
	Source int64 `json:"source"`
	// Translated is the group's position on To: the first message it has not consumed.
	Translated  *int64             `json:"translated"`
	Translation *align.Translation `json:"translation,omitempty"`
	// Persisted is what To's offsets topic holds now, PersistedOrigin where it came from.
	Persisted       *int64 `json:"persisted"`
	PersistedOrigin string `json:"persistedOrigin,omitempty"`
	// Served is what KoP on To serves now.
	Served *int64 `json:"served"`
	// Kept is the newest translation watch kept for the row on To (--keep-translations).
	Kept *loader.Kept `json:"kept,omitempty"`
	// Action: write (the translated offset goes into To's offsets topic), reload (To's
	// topic already holds it, KoP does not serve it), none (already served), refused.
	Action string `json:"action"`
	Why    string `json:"why,omitempty"`
	// Landing is, with the source gone, which kind of position the row lands on (kept,
	// older_kept, own_commit, earliest) or left; Reread how much it re-reads, when known.
	Landing string  `json:"landing,omitempty"`
	Reread  *Reread `json:"reread,omitempty"`
}

// Actions of a Row.
const (
	ActionWrite   = "write"
	ActionReload  = "reload"
	ActionNone    = "none"
	ActionRefused = "refused"
)

func (pl *Planner) now() time.Time {
	if pl.Now != nil {
		return pl.Now()
	}
	return time.Now()
}

// Plan is what a failover will do.
type Plan struct {
	From string `json:"from"`
	To   string `json:"to"`
	Rows []Row  `json:"rows"`
	// Blocked is a reason that refuses the whole failover (replication behind).
	Blocked string `json:"blocked,omitempty"`
	// SourceDown: From did not answer; the rows land on the translations kept on To.
	SourceDown string `json:"sourceDown,omitempty"`
	// Landings counts the rows per landing (Landings) when the source is gone.
	Landings map[string]int `json:"landings,omitempty"`

	// target is the plan's replay of To's offsets topic, handed on to the reload's plan,
	// which reads only what was appended since (the failover's own writes among it).
	target *loader.Snapshot
}

// Groups returns the groups with rows of the given actions.
func (p *Plan) Groups(actions ...string) []string {
	var out []string
	for _, r := range p.Rows {
		if slices.Contains(actions, r.Action) {
			out = append(out, r.Group)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Count returns the rows of one action.
func (p *Plan) Count(action string) int {
	n := 0
	for _, r := range p.Rows {
		if r.Action == action {
			n++
		}
	}
	return n
}

// Plan reads both offsets topics, asks both KoPs, translates, and decides each row.
// Nothing is written.
func (pl *Planner) Plan(ctx context.Context, sc Scope) (*Plan, error) {
	if pl.SourceDown != nil {
		return pl.planKept(ctx, sc)
	}
	plan := &Plan{From: pl.From.Name, To: pl.To.Name, Rows: []Row{}}
	src, err := replayAll(ctx, nil, pl.From)
	if err != nil {
		return nil, err
	}
	plan.target = loader.NewSnapshot(pl.To.Reader, loader.OrderingKoP)
	dst, err := replayAll(ctx, plan.target, pl.To)
	if err != nil {
		return nil, err
	}
	// The rows: what the group committed on From itself.
	for _, co := range src.Offsets() {
		short := loader.ShortName(co.Topic, pl.From.KafkaNamespace)
		if co.Origin != "" || !match.Any(sc.Groups, co.Group) || !match.Any(sc.Topics, short, co.Topic) {
			continue
		}
		plan.Rows = append(plan.Rows, Row{Group: co.Group, Topic: short, Partition: co.Partition, Source: co.Offset})
	}
	slices.SortFunc(plan.Rows, func(a, b Row) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if len(plan.Rows) == 0 {
		return plan, nil
	}
	// Preflight: replication of the groups' offsets partitions caught up.
	if plan.Blocked, err = pl.preflight(ctx, plan.Rows); err != nil {
		return nil, err
	}
	var groups []string
	for _, r := range plan.Rows {
		if len(groups) == 0 || groups[len(groups)-1] != r.Group { // rows are sorted by group
			groups = append(groups, r.Group)
		}
	}
	activity, served, actErr := pl.askTarget(ctx, groups)
	var reqs []align.Request
	for _, r := range plan.Rows {
		req := align.Request{From: pl.From.Name, To: pl.To.Name, Topic: r.Topic, Partition: r.Partition, Offset: r.Source}
		if co, ok := dst.Lookup(r.Group, loader.NormalizeTopic(r.Topic, pl.To.KafkaNamespace), r.Partition); ok {
			// After a failback the group's own commit on the target is where it starts.
			req.Floor = co.Floor()
		}
		reqs = append(reqs, req)
	}
	var translated map[align.Request]align.Result
	if pl.Aligner != nil {
		translated = pl.Aligner.TranslateAll(ctx, reqs)
	}
	for i := range plan.Rows {
		r := &plan.Rows[i]
		full := loader.NormalizeTopic(r.Topic, pl.To.KafkaNamespace)
		if co, ok := dst.Lookup(r.Group, full, r.Partition); ok {
			v := co.Offset
			r.Persisted, r.PersistedOrigin = &v, co.Origin
		}
		if v, ok := served[r.Group][tp{r.Topic, r.Partition}]; ok {
			r.Served = &v
		}
		res, ok := translated[reqs[i]]
		if ok && res.Err == nil {
			t := res.Translation
			r.Translation, r.Translated = &t, &t.Translated
		}
		r.Action, r.Why = pl.decide(r, res, ok, activity[r.Group], actErr)
	}
	if plan.Blocked != "" {
		for i := range plan.Rows {
			if plan.Rows[i].Action == ActionWrite || plan.Rows[i].Action == ActionReload {
				plan.Rows[i].Action, plan.Rows[i].Why = ActionRefused, plan.Blocked
			}
		}
	}
	return plan, nil
}

// preflight returns why the plan is blocked: the replication of an offsets partition of the
// rows' groups from From to To has a backlog, or could not be read ("" when caught up).
func (pl *Planner) preflight(ctx context.Context, rows []Row) (string, error) {
	if pl.Backlog == nil {
		return "", nil
	}
	n, err := pl.From.Reader.Partitions(ctx)
	if err != nil {
		return "", fmt.Errorf("cluster %s: partition count: %w", pl.From.Name, err)
	}
	seen := map[int32]bool{}
	for _, r := range rows {
		seen[loader.PartitionFor(r.Group, n)] = true
	}
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		b, err := pl.Backlog.Backlog(ctx, p)
		if err != nil {
			return fmt.Sprintf("replication of offsets partition %d from %s to %s could not be read: %v", p, pl.From.Name, pl.To.Name, err), nil
		}
		if b > 0 {
			return fmt.Sprintf("replication of offsets partition %d from %s to %s has a backlog of %d entries: the target may not hold the groups' newest commits yet; wait and run again", p, pl.From.Name, pl.To.Name, b), nil
		}
	}
	return "", nil
}

// askTarget asks the target's KoP about the groups: their activity, what it serves each, and
// why it could not describe them (actErr).
func (pl *Planner) askTarget(ctx context.Context, groups []string) (activity map[string]reload.GroupActivity, served map[string]map[tp]int64, actErr error) {
	activity = map[string]reload.GroupActivity{}
	if pl.To.Groups != nil {
		activity, actErr = pl.To.Groups.DescribeGroups(ctx, groups)
	}
	served = map[string]map[tp]int64{}
	for _, g := range groups {
		served[g] = map[tp]int64{}
	}
	if pl.To.Groups == nil {
		return activity, served, actErr
	}
	for g, a := range reload.AskMany(ctx, pl.To.Groups, groups, reload.DefaultServedTimeout) {
		// An error: KoP serves nothing for it now (not coordinator, loading): nothing to lose.
		for _, o := range a.Offsets {
			served[g][tp{o.Topic, o.Partition}] = o.Offset
		}
	}
	return activity, served, actErr
}

type tp struct {
	topic     string
	partition int32
}

// decide is one row's action: the preflight (no members on the target, alignment known,
// nothing of the target's own made older) and what remains to do.
func (pl *Planner) decide(r *Row, res align.Result, translated bool, act reload.GroupActivity, actErr error) (string, string) {
	switch {
	case pl.Aligner == nil || !translated:
		return ActionRefused, "alignment unknown: the copies of the topic could not be compared (no Kafka listener)"
	case res.Err != nil:
		return ActionRefused, "alignment unknown: " + res.Err.Error()
	}
	if reason := pl.targetIdle(act, actErr); reason != "" {
		return ActionRefused, reason
	}
	t := *r.Translated
	own := r.Persisted != nil && (r.PersistedOrigin == "" || r.PersistedOrigin == pl.To.Name)
	if own && *r.Persisted > t && !pl.AcceptLoss {
		return ActionRefused, fmt.Sprintf("the group committed %d on %s itself, past the translated offset %d: failing over would move it back (--accept-loss does it anyway)", *r.Persisted, pl.To.Name, t)
	}
	why := res.String()
	switch {
	case r.Served != nil && *r.Served == t && r.Persisted != nil && *r.Persisted == t:
		return ActionNone, "already served: " + why
	case r.Persisted != nil && *r.Persisted == t:
		return ActionReload, "the offsets topic holds it, KoP does not serve it: " + why
	}
	return ActionWrite, why
}

// targetIdle is why the group is not proven idle on the target ("" when it is).
func (pl *Planner) targetIdle(act reload.GroupActivity, actErr error) string {
	switch {
	case pl.To.Groups == nil:
		return fmt.Sprintf("cluster %s has no kafkaBootstrap: the group is not proven idle there", pl.To.Name)
	case actErr != nil:
		return fmt.Sprintf("the group's activity on %s is unknown: %v", pl.To.Name, actErr)
	case act.Err != nil:
		return fmt.Sprintf("the group's activity on %s is unknown: %v", pl.To.Name, act.Err)
	case act.Members > 0:
		return fmt.Sprintf("the group has %d live members on %s: stop them first (a live group commits its own offsets there)", act.Members, pl.To.Name)
	}
	return ""
}

// replayAll replays every partition of s's offsets topic: through snap, kept for the reload
// to bring up to date, or once (nil).
func replayAll(ctx context.Context, snap *loader.Snapshot, s Side) (*loader.PersistedOffsets, error) {
	n, err := s.Reader.Partitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: partition count of the offsets topic: %w", s.Name, err)
	}
	parts := make([]int32, n)
	for p := range n {
		parts[p] = p
	}
	var po *loader.PersistedOffsets
	if snap != nil {
		po, err = snap.Replay(ctx, parts, 4)
	} else {
		po, err = survey.ReplayPartitions(ctx, s.Reader, parts, 4)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: read the offsets topic: %w", s.Name, err)
	}
	return po, nil
}
