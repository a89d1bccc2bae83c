package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Cluster is one cluster doctor audits.
type Cluster struct {
	Name              string // config name
	AdminURL          string // for the fix commands
	ServiceURL        string // for the fix commands (clusters create/update)
	Tenant            string
	MetadataNamespace string
	KafkaNamespace    string // for short topic names
	KafkaBootstrap    []string
	FromFlags         bool // the ad-hoc cluster (config.Cluster.FromFlags): fixes name its flags
	Admin             Admin

	// PulsarName is the cluster's own name in Pulsar (runtime config clusterName; the config
	// name when the broker does not say). Replication clusters and replicators use it.
	PulsarName string
	// ConfigPulsarName is the cluster's Pulsar name as the config gives it (pulsarCluster,
	// else the config name); "" when the config says nothing (ad hoc). A broker that calls
	// its cluster otherwise is a cluster-name error: replication stats would be read under
	// the wrong name.
	ConfigPulsarName string
}

// MetadataNamespacePath is "<tenant>/<metadataNamespace>".
func (c *Cluster) MetadataNamespacePath() string { return c.Tenant + "/" + c.MetadataNamespace }

// OffsetsTopic is the full name of the cluster's offsets topic.
func (c *Cluster) OffsetsTopic() string { return pulsarx.OffsetsTopic(c.Tenant, c.MetadataNamespace) }

// DefaultOffsetsRetention is KoP's offsetsRetentionMinutes default, 3 days
// (KafkaServiceConfiguration.OffsetsRetentionMinutes = 3 * 24 * 60 in the last open-source
// KoP; very old releases used 7 days). KoP's offsetsMessageTTL default is the same 3 days.
const DefaultOffsetsRetention = 3 * 24 * time.Hour

// DefaultReplicationDelayWarn is the replication delay of an offsets partition from which
// a backlog is a warning rather than information.
const DefaultReplicationDelayWarn = time.Minute

// Options of Run.
type Options struct {
	Clusters []*Cluster
	// Topics to audit (Kafka short names, tenant/ns/topic or full names).
	Topics []string
	// Groups whose topics are audited; GroupTopics finds them.
	Groups []string
	// GroupTopics returns the topics (full names) a group has persisted offsets for on a
	// cluster. Nil: --group is not supported.
	GroupTopics func(ctx context.Context, cl *Cluster, group string) ([]string, error)
	// Kafka probes the KoP listeners; nil skips the kop-listener check.
	Kafka KafkaProber
	// KafkaTimeout bounds one listener probe (default 5s).
	KafkaTimeout time.Duration
	// OffsetsRetention is KoP's offsetsRetentionMinutes (default DefaultOffsetsRetention).
	OffsetsRetention time.Duration
	// ReplicationDelayWarn: see DefaultReplicationDelayWarn.
	ReplicationDelayWarn time.Duration
	// GroupStates judges the groups' offsets as check does and returns, per cluster, the
	// groups ahead, overwritten or behind in a sync or kept deployment (CheckGroupsFollow);
	// nil skips it.
	GroupStates func(ctx context.Context) (GroupStates, error)
	// ReplicatorSettle is how long to wait before reading the replicators again when one is
	// missing or disconnected: loading a topic (which reading its stats does) starts its
	// replicators, which need a moment to connect. Default 2s; negative: no second look.
	ReplicatorSettle time.Duration
}

// ClusterReport is what the report says about one cluster.
type ClusterReport struct {
	Name              string   `json:"name"`
	PulsarName        string   `json:"pulsarName,omitempty"`
	AdminURL          string   `json:"adminURL,omitempty"`
	Reachable         bool     `json:"reachable"`
	BrokerVersion     string   `json:"brokerVersion,omitempty"`
	OffsetsTopic      string   `json:"offsetsTopic"`
	OffsetsPartitions *int32   `json:"offsetsPartitions"`
	KoPAnswers        *bool    `json:"kopAnswers"`
	KafkaBootstrap    []string `json:"kafkaBootstrap,omitempty"`
	// KoPLine is the KoP line its ApiVersions answer shows ("KoP 2.10"), empty when unknown.
	KoPLine string `json:"kopLine,omitempty"`
	// Brokers are the cluster's active brokers, each read at its own address.
	Brokers []BrokerReport `json:"brokers,omitempty"`
	// KafkaListeners are the KoP brokers KoP's Metadata answer advertises, each asked.
	KafkaListeners []KafkaListener `json:"kafkaListeners,omitempty"`
}

// Report is the result of Run.
type Report struct {
	Clusters []ClusterReport `json:"clusters"`
	Topics   []string        `json:"topics,omitempty"`
	Groups   []string        `json:"groups,omitempty"`
	Findings []Finding       `json:"findings"`
	// Summary counts the findings per severity (every severity present, 0 included).
	Summary map[Severity]int `json:"summary"`
	// Unreachable names the clusters whose admin API did not answer.
	Unreachable []string `json:"unreachable,omitempty"`
	// APIErrors is true when an admin call answered with an unexpected error.
	APIErrors bool `json:"apiErrors,omitempty"`
}

// Errors is the number of error findings.
func (r *Report) Errors() int { return r.Summary[SeverityError] }

// run is the state of one Run: the clusters, their availability and the findings.
type run struct {
	opts     Options
	clusters []*Cluster
	down     map[string]bool
	reports  map[string]*ClusterReport
	brokers  map[string]brokerCount // by cluster, from checkBrokers
	orig     map[string]*Cluster    // the clusters as given, without the memoizing Admin
	findings []Finding
	apiErr   bool
	mu       sync.Mutex
}

func (r *run) add(fs ...Finding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.findings = append(r.findings, fs...)
}

func (r *run) up(cl *Cluster) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.down[cl.Name]
}

// failed records an admin error of cluster cl: an unreachable cluster is marked down (and
// reported once, by CheckAdminReachable); any other error is an admin-api finding. It
// returns the finding to add, if any.
func (r *run) failed(cl *Cluster, check, subject, what string, err error) []Finding {
	r.mu.Lock()
	defer r.mu.Unlock()
	if notAdminAPI(err) {
		if r.down[cl.Name] {
			return nil
		}
		r.down[cl.Name] = true
		e := explain.New(cl.Name, explain.Admin, cl.AdminURL, err)
		return []Finding{{
			Severity: SeverityError, Check: CheckAdminReachable, Cluster: cl.Name, Subject: cl.AdminURL,
			Message:  fmt.Sprintf("adminURL %s is not a Pulsar admin API (http 404 to %s): nothing else checked", cl.AdminURL, what),
			Evidence: map[string]any{"adminURL": cl.AdminURL, "error": err.Error(), "while": what},
			Fix:      cl.fix(e.Fix),
		}}
	}
	if isUnreachable(err) {
		if r.down[cl.Name] {
			return nil
		}
		r.down[cl.Name] = true
		return []Finding{{
			Severity: SeverityError, Check: CheckAdminReachable, Cluster: cl.Name, Subject: cl.AdminURL,
			Message:  fmt.Sprintf("the admin API does not answer (%s): nothing else checked", explain.Of(err)),
			Evidence: map[string]any{"adminURL": cl.AdminURL, "error": err.Error(), "while": what},
			Fix:      cl.fix(fmt.Sprintf("start its brokers or correct its adminURL; then: kop-offsets --cluster %s config check", cl.Name)),
		}}
	}
	r.apiErr = true
	f := Finding{
		Severity: SeverityError, Check: CheckAdminAPI, Cluster: cl.Name, Subject: subject,
		Message:  fmt.Sprintf("%s: the admin API answered with an error, so %s was not checked", what, check),
		Evidence: map[string]any{"error": err.Error(), "check": check},
	}
	// A refused credential is the one error an operator fixes in the config, not on the
	// brokers: say so in the message, which is all a table shows (seen on the auth lab with a
	// token of a role without permission: eight findings that never said 401).
	if errors.Is(err, pulsarx.ErrAuth) {
		f.Message = fmt.Sprintf("%s: the admin API of %s refused the credentials (%s), so %s was not checked", what, cl.Name, authStatus(err), check)
		f.Fix = fmt.Sprintf("give cluster %s's pulsarAuth a token of a superuser role (or tenant admin of %s), or correct it: kop-offsets --cluster %s config check", cl.Name, cl.Tenant, cl.Name)
	}
	return []Finding{f}
}

// upClusters returns the reachable clusters.
func (r *run) upClusters() []*Cluster {
	var out []*Cluster
	for _, c := range r.clusters {
		if r.up(c) {
			out = append(out, c)
		}
	}
	return out
}

// Run audits the clusters and returns the report. It only reads.
func Run(ctx context.Context, opts Options) *Report {
	if opts.OffsetsRetention <= 0 {
		opts.OffsetsRetention = DefaultOffsetsRetention
	}
	if opts.ReplicationDelayWarn <= 0 {
		opts.ReplicationDelayWarn = DefaultReplicationDelayWarn
	}
	if opts.ReplicatorSettle == 0 {
		opts.ReplicatorSettle = 2 * time.Second
	}
	if opts.KafkaTimeout <= 0 {
		opts.KafkaTimeout = 5 * time.Second
	}
	r := &run{opts: opts, down: map[string]bool{}, reports: map[string]*ClusterReport{}, brokers: map[string]brokerCount{}, orig: map[string]*Cluster{}}
	for _, c := range opts.Clusters {
		// Memoize: several rules read the same policies and partition counts.
		r.orig[c.Name] = c
		cc := *c
		cc.Admin = newMemoAdmin(c.Admin)
		if cc.PulsarName == "" {
			cc.PulsarName = cc.ConfigPulsarName
		}
		if cc.PulsarName == "" {
			cc.PulsarName = cc.Name
		}
		r.clusters = append(r.clusters, &cc)
		r.reports[c.Name] = &ClusterReport{Name: c.Name, AdminURL: c.AdminURL, OffsetsTopic: cc.OffsetsTopic(), KafkaBootstrap: c.KafkaBootstrap}
	}

	// Per cluster, in parallel: reachability, version, identity, every broker, the Kafka
	// listeners.
	var wg sync.WaitGroup
	first := make([][]Finding, len(r.clusters))
	for i, cl := range r.clusters {
		wg.Go(func() {
			first[i] = checkBroker(ctx, r, cl)
			first[i] = append(first[i], checkBrokers(ctx, r, cl)...)
			if r.opts.Kafka != nil {
				first[i] = append(first[i], checkKoPListener(ctx, r, cl)...)
			}
		})
	}
	wg.Wait()
	for _, fs := range first {
		r.add(fs...)
	}
	r.add(checkBrokerVersions(r)...)

	for _, rule := range []func(context.Context, *run) []Finding{
		checkPeersRegistered,
		checkOffsetsTopic,
		checkMetadataReplication,
		checkTenantAllowed,
		checkOffsetsReplicators,
		checkMetadataRetention,
		checkTopics,
		checkGroupsFollow,
	} {
		if ctx.Err() != nil {
			break
		}
		r.add(rule(ctx, r)...)
	}
	return r.report()
}

// count sets the summary from the findings, every severity present.
func (r *Report) count() {
	r.Summary = map[Severity]int{}
	for _, s := range Severities {
		r.Summary[s] = 0
	}
	for _, f := range r.Findings {
		r.Summary[f.Severity]++
	}
}

func (r *run) report() *Report {
	rep := &Report{Topics: r.opts.Topics, Groups: r.opts.Groups, Summary: map[Severity]int{}, APIErrors: r.apiErr}
	for _, c := range r.clusters {
		cr := r.reports[c.Name]
		cr.Reachable = !r.down[c.Name]
		if cr.Reachable {
			cr.PulsarName = c.PulsarName
		}
		rep.Clusters = append(rep.Clusters, *cr)
		if r.down[c.Name] {
			rep.Unreachable = append(rep.Unreachable, c.Name)
		}
	}
	rep.Findings = slices.Clone(r.findings)
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	SortFindings(rep.Findings)
	rep.count()
	return rep
}

// names returns the Pulsar names of cs, sorted.
func pulsarNames(cs []*Cluster) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.PulsarName)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// authStatus is "http 401" or "http 403" for an admin error that refused the credentials.
func authStatus(err error) string {
	var ae *pulsarx.AdminError
	if errors.As(err, &ae) && ae.Status != 0 {
		return fmt.Sprintf("http %d", ae.Status)
	}
	return "not authorized"
}

// fix is an endpoint's fix as it reads for cl: the flags of the ad-hoc cluster named
// (explain.FlagFix), else as written.
func (c *Cluster) fix(s string) string {
	if !c.FromFlags {
		return s
	}
	return explain.FlagFix(c.Name, map[explain.Kind]string{explain.Admin: c.AdminURL, explain.Pulsar: c.ServiceURL,
		explain.Kafka: strings.Join(c.KafkaBootstrap, ",")}, s)
}
