// Package config loads, validates and prints the kop-offsets configuration file (see
// docs/config.md): a list of Pulsar clusters with KoP, each with its endpoints and
// credentials. Nothing here connects to anything; secrets are resolved only when asked.
package config

import (
	"fmt"
	"slices"
	"strings"
)

// Defaults applied to every cluster.
const (
	DefaultTenant            = "public"
	DefaultMetadataNamespace = "__kafka"
	DefaultKafkaNamespace    = "public/default"

	// OffsetsTopicName is the local name of KoP's offsets topic.
	OffsetsTopicName = "__consumer_offsets"
	// AdHocClusterName is the former name of the cluster --admin-url, --service-url and
	// --bootstrap define (now named after them: AdHoc); --cluster still selects it by it.
	AdHocClusterName = "default"
)

// Config is the whole file.
type Config struct {
	Clusters []Cluster `yaml:"clusters" json:"clusters"`

	// Path is the file the config was read from; empty for an ad-hoc config.
	Path string `yaml:"-" json:"-"`

	// adHoc: the config of AdHoc, whose cluster is named after what the user typed.
	adHoc bool
}

// Cluster is one Pulsar cluster running KoP.
type Cluster struct {
	Name string `yaml:"name" json:"name"`
	// PulsarCluster is the cluster's own name in Pulsar (the brokers' clusterName, the key
	// of replicators and replication clusters); empty: the same as Name.
	PulsarCluster  string   `yaml:"pulsarCluster,omitempty" json:"pulsarCluster,omitempty"`
	AdminURL       string   `yaml:"adminURL,omitempty" json:"adminURL,omitempty"`
	ServiceURL     string   `yaml:"serviceURL,omitempty" json:"serviceURL,omitempty"`
	KafkaBootstrap []string `yaml:"kafkaBootstrap,omitempty" json:"kafkaBootstrap,omitempty"`
	Tenant         string   `yaml:"tenant,omitempty" json:"tenant,omitempty"`
	// Tenants replaces Tenant for a multi-tenant KoP: one offsets topic per tenant.
	Tenants           *Tenants    `yaml:"tenants,omitempty" json:"tenants,omitempty"`
	MetadataNamespace string      `yaml:"metadataNamespace,omitempty" json:"metadataNamespace,omitempty"`
	KafkaNamespace    string      `yaml:"kafkaNamespace,omitempty" json:"kafkaNamespace,omitempty"`
	PulsarAuth        *PulsarAuth `yaml:"pulsarAuth,omitempty" json:"pulsarAuth,omitempty"`
	KafkaAuth         *KafkaAuth  `yaml:"kafkaAuth,omitempty" json:"kafkaAuth,omitempty"`
	// FromFlags: the ad-hoc cluster of --admin-url, --service-url and --bootstrap (AdHoc).
	// Fixes name those flags, not config fields the user never wrote.
	FromFlags bool `yaml:"-" json:"-"`
}

// PulsarName is the cluster's name in Pulsar: PulsarCluster, else Name.
func (c Cluster) PulsarName() string {
	if c.PulsarCluster != "" {
		return c.PulsarCluster
	}
	return c.Name
}

// PulsarNames maps the Pulsar name of each cluster of cs to its config name: replication
// stats are keyed by Pulsar's names, everything kop-offsets reports by config names.
func PulsarNames(cs []Cluster) map[string]string {
	m := make(map[string]string, len(cs))
	for _, cl := range cs {
		m[cl.PulsarName()] = cl.Name
	}
	return m
}

// PulsarAuth is how to authenticate to the admin API and the binary protocol. At most one
// of Token, TokenFile and OAuth2 is set.
type PulsarAuth struct {
	Token     Secret  `yaml:"token,omitempty" json:"token,omitempty"`
	TokenFile string  `yaml:"tokenFile,omitempty" json:"tokenFile,omitempty"`
	OAuth2    *OAuth2 `yaml:"oauth2,omitempty" json:"oauth2,omitempty"`
	TLS       *TLS    `yaml:"tls,omitempty" json:"tls,omitempty"`
}

// OAuth2 is the client-credentials flow: PrivateKey is the credentials key file (JSON with
// client_id and client_secret), as in pulsarctl and the Pulsar clients.
type OAuth2 struct {
	IssuerURL  string `yaml:"issuerURL" json:"issuerURL"`
	PrivateKey string `yaml:"privateKey" json:"privateKey"`
	Audience   string `yaml:"audience,omitempty" json:"audience,omitempty"`
	Scope      string `yaml:"scope,omitempty" json:"scope,omitempty"`
}

// TLS is the trust and client-certificate setup of one connection kind.
type TLS struct {
	CAFile             string `yaml:"caFile,omitempty" json:"caFile,omitempty"`
	CertFile           string `yaml:"certFile,omitempty" json:"certFile,omitempty"`
	KeyFile            string `yaml:"keyFile,omitempty" json:"keyFile,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify,omitempty" json:"insecureSkipVerify,omitempty"`
}

// KafkaAuth is how to authenticate to the KoP listeners. A TLS block with any field set
// turns TLS on for the Kafka connections; an all-empty block (as in the documented
// example) leaves them in plain text.
type KafkaAuth struct {
	SASL *SASL `yaml:"sasl,omitempty" json:"sasl,omitempty"`
	TLS  *TLS  `yaml:"tls,omitempty" json:"tls,omitempty"`
}

// SASL mechanisms.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// SASL is the Kafka SASL setup. For KoP's token authentication use PLAIN with the tenant
// as username and "token:<jwt>" as password.
type SASL struct {
	Mechanism string `yaml:"mechanism" json:"mechanism"`
	Username  string `yaml:"username" json:"username"`
	Password  Secret `yaml:"password" json:"password"`
}

// MetadataNamespacePath is "<tenant>/<metadataNamespace>", where KoP keeps its offsets topic.
func (c Cluster) MetadataNamespacePath() string { return c.Tenant + "/" + c.MetadataNamespace }

// OffsetsTopic is the full name of KoP's partitioned offsets topic:
// persistent://<tenant>/<metadataNamespace>/__consumer_offsets.
func (c Cluster) OffsetsTopic() string {
	return "persistent://" + c.MetadataNamespacePath() + "/" + OffsetsTopicName
}

// OffsetsPartitionTopic is the full name of partition n of the offsets topic.
func (c Cluster) OffsetsPartitionTopic(n int32) string {
	return fmt.Sprintf("%s-partition-%d", c.OffsetsTopic(), n)
}

// KafkaTLSEnabled reports whether the Kafka connections use TLS: the kafkaAuth.tls block
// sets at least one field.
func (c Cluster) KafkaTLSEnabled() bool {
	return c.KafkaAuth != nil && c.KafkaAuth.TLS != nil && !c.KafkaAuth.TLS.IsZero()
}

// IsZero reports whether no field is set.
func (t *TLS) IsZero() bool { return t == nil || *t == TLS{} }

// PulsarTLS returns the Pulsar TLS block, nil when there is none.
func (c Cluster) PulsarTLS() *TLS {
	if c.PulsarAuth == nil {
		return nil
	}
	return c.PulsarAuth.TLS
}

// Names returns the cluster names in order.
func Names(cs []Cluster) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// Cluster returns the cluster named name.
func (c *Config) Cluster(name string) (Cluster, bool) {
	for _, cl := range c.Clusters {
		if cl.Name == name || c.adHoc && name == AdHocClusterName {
			return cl, true
		}
	}
	return Cluster{}, false
}

// Select returns the clusters named in names, in the order given, each at most once.
// Entries may hold comma-separated lists (as `--cluster a,b --cluster c` yields). No names
// selects every cluster. An unknown name is an *Error.
func (c *Config) Select(names []string) ([]Cluster, error) {
	var want []string
	for _, n := range names {
		for _, p := range strings.Split(n, ",") {
			if p = strings.TrimSpace(p); p != "" {
				want = append(want, p)
			}
		}
	}
	if len(want) == 0 {
		return append([]Cluster(nil), c.Clusters...), nil
	}
	seen := map[string]bool{}
	var out []Cluster
	for _, n := range want {
		cl, ok := c.Cluster(n)
		if !ok {
			return nil, &Error{Path: c.Path, Msg: fmt.Sprintf("unknown cluster %q (known: %s)",
				n, strings.Join(Names(c.Clusters), ", ")), Err: ErrUnknownCluster}
		}
		if !seen[cl.Name] {
			seen[cl.Name] = true
			out = append(out, cl)
		}
	}
	return out, nil
}

func (c *Cluster) applyDefaults() {
	if c.Tenant == "" && c.Tenants == nil {
		c.Tenant = DefaultTenant
	}
	if c.MetadataNamespace == "" {
		c.MetadataNamespace = DefaultMetadataNamespace
	}
	if c.KafkaNamespace == "" {
		c.KafkaNamespace = DefaultKafkaNamespace
	}
	c.KafkaAuth.normalize()
	if c.Tenants != nil {
		for i := range c.Tenants.List {
			c.Tenants.List[i].KafkaAuth.normalize()
		}
	}
}

func (ka *KafkaAuth) normalize() {
	if ka != nil && ka.SASL != nil {
		ka.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(ka.SASL.Mechanism))
	}
}

// Redacted returns a deep copy in which every literal secret reads "<redacted>". Secret
// references (env:NAME, file:PATH) are kept: they name where the secret is, not what it is.
func (c *Config) Redacted() *Config {
	out := &Config{Path: c.Path, Clusters: make([]Cluster, len(c.Clusters))}
	for i, cl := range c.Clusters {
		out.Clusters[i] = cl.Redacted()
	}
	return out
}

// Redacted returns a deep copy of the cluster with literal secrets replaced; see Config.Redacted.
func (c Cluster) Redacted() Cluster {
	out := c.clone()
	if out.PulsarAuth != nil {
		out.PulsarAuth.Token = out.PulsarAuth.Token.Redacted()
	}
	out.KafkaAuth.redact()
	if out.Tenants != nil {
		for i := range out.Tenants.List {
			out.Tenants.List[i].KafkaAuth.redact()
		}
	}
	return out
}

func (ka *KafkaAuth) redact() {
	if ka != nil && ka.SASL != nil {
		ka.SASL.Password = ka.SASL.Password.Redacted()
	}
}

func (c Cluster) clone() Cluster {
	out := c
	out.KafkaBootstrap = append([]string(nil), c.KafkaBootstrap...)
	if c.PulsarAuth != nil {
		pa := *c.PulsarAuth
		if pa.OAuth2 != nil {
			o := *pa.OAuth2
			pa.OAuth2 = &o
		}
		if pa.TLS != nil {
			t := *pa.TLS
			pa.TLS = &t
		}
		out.PulsarAuth = &pa
	}
	out.KafkaAuth = c.KafkaAuth.clone()
	if c.Tenants != nil {
		ts := Tenants{Auto: c.Tenants.Auto, List: slices.Clone(c.Tenants.List)}
		for i := range ts.List {
			ts.List[i].KafkaAuth = ts.List[i].KafkaAuth.clone()
		}
		out.Tenants = &ts
	}
	return out
}

func (ka *KafkaAuth) clone() *KafkaAuth {
	if ka == nil {
		return nil
	}
	out := *ka
	if out.SASL != nil {
		s := *out.SASL
		out.SASL = &s
	}
	if out.TLS != nil {
		t := *out.TLS
		out.TLS = &t
	}
	return &out
}
