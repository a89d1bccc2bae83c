package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/connect"
)

// Configure sets up geo-replication between all clusters, idempotently:
//   - each cluster knows every other one (serviceUrl, brokerServiceUrl);
//   - tenant public allows all clusters;
//   - public/default and public/__kafka exist (public/__kafka with 4 bundles, as KoP would
//     create it with defaultNumberOfNamespaceBundles=4) and replicate to all clusters;
//   - persistent://public/__kafka/__consumer_offsets exists with 8 partitions (KoP with
//     offsetsTopicNumPartitions=8 would create it so) and persistent://public/default/topic-1
//     with 1 partition, on every cluster (auto-created partitioned topics are local only).
func Configure(ctx context.Context, cs []Cluster, log io.Writer) error {
	names := ClusterNames(cs)
	admins, err := newAdmins(cs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i, c := range cs {
		if err := configureCluster(ctx, admins[i], c, cs, names, log); err != nil {
			return err
		}
	}
	for i, c := range cs {
		for _, t := range []struct {
			name string
			n    int
		}{{OffsetsTopic, OffsetsTopicPartitions}, {Topic1, Topic1Partitions}} {
			if err := ensurePartitioned(ctx, admins[i], t.name, t.n); err != nil {
				return fmt.Errorf("lab: %s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// configureCluster registers the other clusters on c, lets tenant public use them all, and
// creates and replicates the namespaces.
func configureCluster(ctx context.Context, a pulsaradmin.Client, c Cluster, cs []Cluster, names []string, log io.Writer) error {
	for _, o := range cs {
		if o.Name == c.Name {
			continue
		}
		if err := ensureClusterRegistered(ctx, a, o); err != nil {
			return fmt.Errorf("lab: %s: register cluster %s: %w", c.Name, o.Name, err)
		}
	}
	td, err := a.Tenants().GetWithContext(ctx, Tenant)
	if err != nil {
		return fmt.Errorf("lab: %s: tenant %s: %w", c.Name, Tenant, err)
	}
	if !sameSet(td.AllowedClusters, names) {
		td.Name = Tenant
		td.AllowedClusters = names
		if td.AdminRoles == nil {
			td.AdminRoles = []string{}
		}
		if err := a.Tenants().UpdateWithContext(ctx, td); err != nil {
			return fmt.Errorf("lab: %s: tenant %s allowed clusters %v: %w", c.Name, Tenant, names, err)
		}
	}
	ns := publicNamespaces()
	if err := ns.ensure(ctx, a, c, names, log); err != nil {
		return err
	}
	if err := ns.ensureMetadataPolicies(ctx, a, c); err != nil {
		return err
	}
	return ns.ensureReplication(ctx, a, c, names)
}

// labNamespaces are a tenant's Kafka data namespace and KoP metadata namespace, which the lab
// prepares alike for public and for each extra tenant (tenants.go).
type labNamespaces struct {
	Tenant, Default, Metadata string
}

func publicNamespaces() labNamespaces {
	return labNamespaces{Tenant: Tenant, Default: DefaultNamespace, Metadata: MetadataNamespace}
}

// ensureReplication sets the replication clusters of both namespaces to names.
func (n labNamespaces) ensureReplication(ctx context.Context, a pulsaradmin.Client, c Cluster, names []string) error {
	for _, ns := range []string{n.Default, n.Metadata} {
		cur, err := a.Namespaces().GetNamespaceReplicationClustersWithContext(ctx, ns)
		if err != nil {
			return fmt.Errorf("lab: %s: replication clusters of %s: %w", c.Name, ns, err)
		}
		if sameSet(cur, names) {
			continue
		}
		if err := a.Namespaces().SetNamespaceReplicationClustersWithContext(ctx, ns, names); err != nil {
			return fmt.Errorf("lab: %s: set replication clusters of %s to %v: %w", c.Name, ns, names, err)
		}
	}
	return nil
}

// ensure creates the data namespace and the metadata namespace (with its bundles) when
// missing; log, when not nil, hears about the metadata namespace's creation.
func (n labNamespaces) ensure(ctx context.Context, a pulsaradmin.Client, c Cluster, names []string, log io.Writer) error {
	nss, err := a.Namespaces().GetNamespacesWithContext(ctx, n.Tenant)
	if err != nil {
		return fmt.Errorf("lab: %s: namespaces: %w", c.Name, err)
	}
	if !slices.Contains(nss, n.Default) {
		// With the replication clusters at once: a tenant's namespace created with the
		// broker's default (its own cluster) would replicate nothing until set.
		pol := utils.NewDefaultPolicies()
		pol.ReplicationClusters = names
		if err := a.Namespaces().CreateNsWithPolicesWithContext(ctx, n.Default, *pol); err != nil && !connect.IsRESTStatus(err, http.StatusConflict) {
			return fmt.Errorf("lab: %s: create %s: %w", c.Name, n.Default, err)
		}
	}
	if !slices.Contains(nss, n.Metadata) {
		if log != nil {
			fmt.Fprintf(log, "lab: %s: creating %s with %d bundles\n", c.Name, n.Metadata, MetadataBundles)
		}
		// Not CreateNsWithNumBundles: pulsaradmin v0.19.0 sends "replication_clusters": null
		// with it, and Pulsar 4.0.8 answers 500 (NullPointerException in
		// BrokerService.setCurrentClusterAllowedIfNoClusterIsAllowed).
		pol := utils.NewDefaultPolicies()
		pol.Bundles = utils.NewBundlesDataWithNumBundles(MetadataBundles)
		pol.ReplicationClusters = names
		if err := a.Namespaces().CreateNsWithPolicesWithContext(ctx, n.Metadata, *pol); err != nil && !connect.IsRESTStatus(err, http.StatusConflict) {
			return fmt.Errorf("lab: %s: create %s: %w", c.Name, n.Metadata, err)
		}
	}
	return nil
}

// MetadataBundlesOK reports whether b, public/__kafka's bundles, are the lab's
// MetadataBundles equal bundles, or splits of them: every boundary of the lab's layout is
// still one. Pulsar cannot merge bundles back, so a running lab in which a bundle was split
// (TestTopologyReloadAfterTheBundleSplit, or the load manager's auto-split) keeps the split.
func MetadataBundlesOK(b *utils.BundlesData) bool {
	if b == nil || b.NumBundles < MetadataBundles {
		return false
	}
	have := map[uint64]bool{}
	for _, s := range b.Boundaries {
		if v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64); err == nil {
			have[v] = true
		}
	}
	const step = uint64(1<<32) / MetadataBundles
	for i := range uint64(MetadataBundles) {
		if !have[i*step] {
			return false
		}
	}
	return have[0xffffffff]
}

// ensureMetadataPolicies checks the metadata namespace's bundles and sets KoP's retention and
// compaction threshold on it.
func (n labNamespaces) ensureMetadataPolicies(ctx context.Context, a pulsaradmin.Client, c Cluster) error {
	pol, err := a.Namespaces().GetPoliciesWithContext(ctx, n.Metadata)
	if err != nil {
		return fmt.Errorf("lab: %s: policies of %s: %w", c.Name, n.Metadata, err)
	}
	if !MetadataBundlesOK(pol.Bundles) {
		return fmt.Errorf("lab: %s: %s has %v bundles, want %d (or splits of them)", c.Name, n.Metadata, pol.Bundles, MetadataBundles)
	}
	// KoP (MetadataUtils.createNamespaceIfMissing) gives the metadata namespace a retention
	// of offsetsRetentionMinutes (3 days), unlimited size, a message TTL of offsetsMessageTTL
	// (3 days) and a 100 MB compaction threshold,
	// but only when it creates the namespace itself. The lab creates it first, so it sets
	// the same policies; without them a replicated-and-read ledger is deleted on rollover.
	if pol.RetentionPolicies == nil || pol.RetentionPolicies.RetentionTimeInMinutes != MetadataRetentionMinutes {
		if err := a.Namespaces().SetRetentionWithContext(ctx, n.Metadata, utils.NewRetentionPolicies(MetadataRetentionMinutes, -1)); err != nil {
			return fmt.Errorf("lab: %s: set retention of %s: %w", c.Name, n.Metadata, err)
		}
	}
	// And offsetsMessageTTL (3 days) as message TTL: KoP sets it with the retention.
	if pol.MessageTTLInSeconds == nil || *pol.MessageTTLInSeconds != MetadataMessageTTLSeconds {
		if err := a.Namespaces().SetNamespaceMessageTTLWithContext(ctx, n.Metadata, MetadataMessageTTLSeconds); err != nil {
			return fmt.Errorf("lab: %s: set message TTL of %s: %w", c.Name, n.Metadata, err)
		}
	}
	if pol.CompactionThreshold == nil || *pol.CompactionThreshold != MetadataCompactionThreshold {
		nsName, err := utils.GetNamespaceName(n.Metadata)
		if err != nil {
			return fmt.Errorf("lab: %s: %w", c.Name, err)
		}
		if err := a.Namespaces().SetCompactionThresholdWithContext(ctx, *nsName, MetadataCompactionThreshold); err != nil {
			return fmt.Errorf("lab: %s: set compaction threshold of %s: %w", c.Name, n.Metadata, err)
		}
	}
	return nil
}

func ensureClusterRegistered(ctx context.Context, a pulsaradmin.Client, o Cluster) error {
	// Every broker of o, in Pulsar's multi-host form: the replicator reaches o while any of
	// them is up (a standalone's is its one URL); on an auth lab its TLS URLs and auth too.
	want := clusterData(o)
	cur, err := a.Clusters().GetWithContext(ctx, o.Name)
	if err != nil {
		if !connect.IsRESTStatus(err, http.StatusNotFound) && !connect.IsRESTStatus(err, http.StatusPreconditionFailed) {
			return err
		}
		if err := a.Clusters().CreateWithContext(ctx, want); err != nil && !connect.IsRESTStatus(err, http.StatusConflict) {
			return err
		}
		return nil
	}
	if sameRegistration(cur, want) {
		return nil
	}
	return a.Clusters().UpdateWithContext(ctx, want)
}

// ensurePartitioned creates topic with n partitions unless it exists; an existing topic with
// another partition count is an error.
func ensurePartitioned(ctx context.Context, a pulsaradmin.Client, topic string, n int) error {
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 2; attempt++ {
		md, err := a.Topics().GetMetadataWithContext(ctx, *tn)
		if err != nil && !connect.IsRESTStatus(err, http.StatusNotFound) {
			return fmt.Errorf("partitions of %s: %w", topic, err)
		}
		switch {
		case err == nil && md.Partitions == n:
			return nil
		case err == nil && md.Partitions != 0:
			return fmt.Errorf("%s has %d partitions, want %d", topic, md.Partitions, n)
		}
		// Creating it may race with the replicator creating it from the other side: 409 is fine,
		// the next round checks the count.
		if err := a.Topics().CreateWithContext(ctx, *tn, n); err != nil && !connect.IsRESTStatus(err, http.StatusConflict) {
			return fmt.Errorf("create %s with %d partitions: %w", topic, n, err)
		}
	}
	md, err := a.Topics().GetMetadataWithContext(ctx, *tn)
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", topic, err)
	}
	if md.Partitions != n {
		return fmt.Errorf("%s has %d partitions after create, want %d", topic, md.Partitions, n)
	}
	return nil
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// newAdmins is an admin client per cluster of cs, in order.
func newAdmins(cs []Cluster) ([]pulsaradmin.Client, error) {
	admins := make([]pulsaradmin.Client, len(cs))
	for i, c := range cs {
		a, err := NewAdmin(c)
		if err != nil {
			return nil, err
		}
		admins[i] = a
	}
	return admins, nil
}
