package lab

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
)

// Multi-tenant KoP (issue 33). KoP's kafkaEnableMultiTenantMetadata (on by default) makes the
// SASL username of a Kafka client pick its tenant, and keeps that tenant's groups in
// <tenant>/__kafka/__consumer_offsets (docs/kop-facts.md, "Tenants"). Without authentication
// KoP has no username, so every client is tenant public: tenants need the token lab.

// TenantPrefix names the lab's extra tenants: tenant1..tenantN.
const TenantPrefix = "tenant"

// TenantNames is tenant1..tenantN.
func TenantNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = TenantPrefix + strconv.Itoa(i+1)
	}
	return out
}

// ParseTenantCount parses --tenants or $KOP_LAB_TENANTS; empty means none.
func ParseTenantCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("lab: tenants %q: want a number >= 1 (KOP_LAB_TENANTS, --tenants)", s)
	}
	return n, nil
}

// CheckTenants refuses tenants on a lab without auth: KoP then sees no SASL username and
// serves every client as kafkaMetadataTenant (public), so a second tenant could never be
// reached through Kafka.
func CheckTenants(n int, auth AuthMode) error {
	if n > 0 && auth.orNone() != AuthToken {
		return fmt.Errorf("lab: --tenants %d (KOP_LAB_TENANTS) needs --auth token (KOP_LAB_AUTH=token): without authentication KoP has no SASL username to pick a tenant from and serves every client as tenant %s", n, Tenant)
	}
	return nil
}

// TenantRole is the role of tenant t's own token.
func TenantRole(t string) string { return t + "-client" }

// TenantDefaultNamespace is where tenant t's Kafka topics live (KoP: <tenant>/<kafkaNamespace>).
func TenantDefaultNamespace(t string) string { return t + "/default" }

// TenantMetadataNamespace is tenant t's KoP metadata namespace.
func TenantMetadataNamespace(t string) string { return t + "/__kafka" }

// TenantOffsetsTopic is tenant t's offsets topic.
func TenantOffsetsTopic(t string) string {
	return "persistent://" + TenantMetadataNamespace(t) + "/__consumer_offsets"
}

// TenantFiles are tenant t's token and KoP password files, beside the lab's other auth files.
type TenantFiles struct {
	Token         string `json:"token"`
	KafkaPassword string `json:"kafkaPassword"`
}

// tenantFiles names tenant t's files of the auth files f.
func tenantFiles(f AuthFiles, t string) TenantFiles {
	r := TenantRole(t)
	return TenantFiles{Token: filepath.Join(f.Dir, r+".token"), KafkaPassword: filepath.Join(f.Dir, r+".kafka-password")}
}

// TenantFilesOf are tenant t's files on the auth lab whose files are f.
func TenantFilesOf(f AuthFiles, t string) TenantFiles { return tenantFiles(f, t) }

// ensureTenantTokens signs, with the lab's secret key, a token for each tenant's role that
// has none yet (kept while present, like the lab's other tokens, so a running lab's stay valid).
func ensureTenantTokens(f AuthFiles, tenants []string) error {
	var key []byte
	for _, t := range tenants {
		tf := tenantFiles(f, t)
		if fileExists(tf.Token) && fileExists(tf.KafkaPassword) {
			continue
		}
		if key == nil {
			k, err := os.ReadFile(f.SecretKey)
			if err != nil {
				return fmt.Errorf("lab: tenant tokens: %w", err)
			}
			key = k
		}
		tok, err := SignToken(key, TenantRole(t))
		if err != nil {
			return err
		}
		if err := writeSecret(tf.Token, []byte(tok)); err != nil {
			return err
		}
		if err := writeSecret(tf.KafkaPassword, []byte("token:"+tok)); err != nil {
			return err
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TenantKafkaAuth is tenant t's Kafka credentials on cluster c: SASL/PLAIN with username t
// (KoP's tenant) and its own role's token as password; nil without auth.
func (c Cluster) TenantKafkaAuth(t string) *config.KafkaAuth {
	if c.Auth == nil {
		return nil
	}
	return &config.KafkaAuth{SASL: &config.SASL{
		Mechanism: config.MechanismPlain,
		Username:  t,
		Password:  config.Secret("file:" + tenantFiles(c.Auth.Files, t).KafkaPassword),
	}}
}

// ConfigTenant is tenant t as config.yaml lists it under the cluster's tenants.
func (c Cluster) ConfigTenant(t string) config.Tenant {
	return config.Tenant{Name: t, KafkaNamespace: TenantDefaultNamespace(t), KafkaAuth: c.TenantKafkaAuth(t)}
}

// TenantConfig is cluster c as tenant t's Kafka clients see it (config.Cluster.ForTenant):
// the tenant's offsets topic, short names in <t>/default, and its own token. An empty t or
// public is c.Config(), the superuser as tenant public.
func (c Cluster) TenantConfig(t string) config.Cluster {
	if t == "" || t == Tenant {
		return c.Config()
	}
	return c.Config().ForTenant(c.ConfigTenant(t))
}

// ConfigureTenants prepares tenants on every cluster the way Configure prepares public, so
// each tenant's offsets replicate exactly as public's: the tenant allows every cluster; its
// <t>/default and <t>/__kafka (4 bundles, KoP's retention and compaction threshold) replicate
// to every cluster; its role may produce and consume in <t>/default. With KoP, each
// cluster's KoP is then asked for a group of the tenant as the tenant, which makes it boot the
// tenant's group coordinator and create the offsets topic itself (with offsetsTopicNumPartitions
// and its entry-format property); the lab waits until the topic has OffsetsTopicPartitions
// partitions on every cluster, and creates it where KoP does not run.
func ConfigureTenants(ctx context.Context, cs []Cluster, tenants []string, kopOn bool) error {
	if len(tenants) == 0 {
		return nil
	}
	if len(cs) == 0 || cs[0].Auth == nil {
		return CheckTenants(len(tenants), AuthNone)
	}
	if err := ensureTenantTokens(cs[0].Auth.Files, tenants); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	names := ClusterNames(cs)
	admins, err := newAdmins(cs)
	if err != nil {
		return err
	}
	for i, c := range cs {
		for _, t := range tenants {
			if err := configureTenant(ctx, admins[i], c, t, names); err != nil {
				return err
			}
		}
	}
	for i, c := range cs {
		for _, t := range tenants {
			if err := ensureTenantOffsetsTopic(ctx, admins[i], c, t, kopOn && c.KoP); err != nil {
				return fmt.Errorf("lab: %s: tenant %s: %w", c.Name, t, err)
			}
		}
	}
	return nil
}

// configureTenant creates tenant t on c (allowed on every cluster), its namespaces with their
// replication and policies, and its role's grant.
func configureTenant(ctx context.Context, a pulsaradmin.Client, c Cluster, t string, names []string) error {
	if err := ensureTenant(ctx, a, t, names); err != nil {
		return fmt.Errorf("lab: %s: tenant %s: %w", c.Name, t, err)
	}
	ns := labNamespaces{Tenant: t, Default: TenantDefaultNamespace(t), Metadata: TenantMetadataNamespace(t)}
	if err := ns.ensure(ctx, a, c, names, nil); err != nil {
		return err
	}
	if err := ns.ensureMetadataPolicies(ctx, a, c); err != nil {
		return err
	}
	if err := ns.ensureReplication(ctx, a, c, names); err != nil {
		return err
	}
	if err := grantTenantRole(ctx, a, t); err != nil {
		return fmt.Errorf("lab: %s: tenant %s: %w", c.Name, t, err)
	}
	return nil
}

// ensureTenant creates tenant t, or widens its allowed clusters to names. Admin roles: the
// superuser only, as KoP gives a tenant it creates (MetadataUtils.createTenantIfMissing).
func ensureTenant(ctx context.Context, a pulsaradmin.Client, t string, names []string) error {
	td, err := a.Tenants().GetWithContext(ctx, t)
	if err != nil && !connect.IsRESTStatus(err, http.StatusNotFound) {
		return err
	}
	if err != nil {
		err = a.Tenants().CreateWithContext(ctx, utils.TenantData{Name: t, AdminRoles: []string{SuperuserRole}, AllowedClusters: names})
		if err != nil && !connect.IsRESTStatus(err, http.StatusConflict) {
			return fmt.Errorf("create: %w", err)
		}
		return nil
	}
	if sameSet(td.AllowedClusters, names) {
		return nil
	}
	td.Name, td.AllowedClusters = t, names
	if td.AdminRoles == nil {
		td.AdminRoles = []string{}
	}
	return a.Tenants().UpdateWithContext(ctx, td)
}

// grantTenantRole lets tenant t's role produce and consume in <t>/default: KoP authorizes a
// client's produce, fetch, offset commit and fetch on the Kafka topic with Pulsar's
// permissions of the token's role, while the offsets topic is written by KoP's own clients
// (the broker's superuser), so <t>/__kafka needs no grant.
func grantTenantRole(ctx context.Context, a pulsaradmin.Client, t string) error {
	ns, err := utils.GetNamespaceName(TenantDefaultNamespace(t))
	if err != nil {
		return err
	}
	perms, err := a.Namespaces().GetNamespacePermissionsWithContext(ctx, *ns)
	if err != nil {
		return fmt.Errorf("permissions of %s: %w", ns, err)
	}
	want := []utils.AuthAction{"produce", "consume"}
	if have := perms[TenantRole(t)]; slices.Contains(have, want[0]) && slices.Contains(have, want[1]) {
		return nil
	}
	if err := a.Namespaces().GrantNamespacePermissionWithContext(ctx, *ns, TenantRole(t), want); err != nil {
		return fmt.Errorf("grant %s produce, consume on %s: %w", TenantRole(t), ns, err)
	}
	return nil
}

// ensureTenantOffsetsTopic makes tenant t's offsets topic exist on c with
// OffsetsTopicPartitions partitions: with KoP by asking KoP (as the tenant) for a group, which
// boots the tenant's group coordinator, and waiting for the topic KoP creates; without KoP
// the lab creates it.
func ensureTenantOffsetsTopic(ctx context.Context, a pulsaradmin.Client, c Cluster, t string, kopOn bool) error {
	topic := TenantOffsetsTopic(t)
	if !kopOn {
		return ensurePartitioned(ctx, a, topic, OffsetsTopicPartitions)
	}
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		return err
	}
	var last error
	for {
		if last = bootTenantCoordinator(ctx, c, t); last == nil {
			md, err := a.Topics().GetMetadataWithContext(ctx, *tn)
			switch {
			case err == nil && md.Partitions == OffsetsTopicPartitions:
				return nil
			case err == nil && md.Partitions != 0:
				return fmt.Errorf("%s has %d partitions, want %d (offsetsTopicNumPartitions)", topic, md.Partitions, OffsetsTopicPartitions)
			case err != nil:
				last = fmt.Errorf("partitions of %s: %w", topic, err)
			default:
				last = fmt.Errorf("%s does not exist yet", topic)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("KoP did not create %s: %w", topic, last)
		case <-time.After(time.Second):
		}
	}
}

// bootTenantCoordinator asks c's KoP, as tenant t, for the offsets of a probe group: KoP
// creates a tenant's group coordinator (and its offsets topic) on the first group request
// of one of its clients (KafkaProtocolHandler#getGroupCoordinator).
func bootTenantCoordinator(ctx context.Context, c Cluster, t string) error {
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, _, err := FetchThroughKoPAs(fctx, c, t, "lab-probe-0", "persistent://"+TenantDefaultNamespace(t)+"/"+"topic-1", 0)
	return err
}
