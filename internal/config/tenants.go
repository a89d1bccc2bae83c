package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kop-offsets/kop-offsets/internal/match"
)

// TenantsAuto is the value of `tenants: auto`: every tenant whose metadata namespace holds
// an offsets topic, found through the admin API when a command starts.
const TenantsAuto = "auto"

// Tenants is a cluster's `tenants:` key: the tenants whose offsets topics to cover (KoP's
// kafkaEnableMultiTenantMetadata keeps one per tenant), or Auto. A cluster has either
// `tenant:` (one tenant, the default public) or `tenants:`.
type Tenants struct {
	Auto bool
	List []Tenant
}

// Tenant is one tenant of a cluster.
type Tenant struct {
	Name string `yaml:"name" json:"name"`
	// KafkaNamespace is where the tenant's clients' short topic names live; default
	// <name>/<the namespace part of the cluster's kafkaNamespace>.
	KafkaNamespace string `yaml:"kafkaNamespace,omitempty" json:"kafkaNamespace,omitempty"`
	// KafkaAuth is the tenant's Kafka credentials; default the cluster's kafkaAuth with the
	// SASL username set to the tenant (KoP picks the tenant from the username, so one
	// super-user token serves every tenant).
	KafkaAuth *KafkaAuth `yaml:"kafkaAuth,omitempty" json:"kafkaAuth,omitempty"`
}

// UnmarshalYAML reads `auto`, a list of names, or a list of tenant mappings (mixed allowed).
func (t *Tenants) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != TenantsAuto {
			return fmt.Errorf("line %d: tenants: %q must be %q or a list of tenants", n.Line, n.Value, TenantsAuto)
		}
		*t = Tenants{Auto: true}
		return nil
	case yaml.SequenceNode:
		*t = Tenants{List: []Tenant{}}
		for _, item := range n.Content {
			var tn Tenant
			switch item.Kind {
			case yaml.ScalarNode:
				tn.Name = item.Value
			case yaml.MappingNode:
				// node.Decode is not strict: decode a copy with KnownFields so that a typo
				// in a tenant's keys is an error, as everywhere else in the file.
				b, err := yaml.Marshal(item)
				if err != nil {
					return err
				}
				dec := yaml.NewDecoder(bytes.NewReader(b))
				dec.KnownFields(true)
				type plain Tenant
				if err := dec.Decode((*plain)(&tn)); err != nil {
					return fmt.Errorf("line %d: tenants: %s", item.Line, strings.TrimPrefix(yamlMessage(err), "yaml: "))
				}
			default:
				return fmt.Errorf("line %d: tenants: an entry must be a tenant name or a mapping with name", item.Line)
			}
			t.List = append(t.List, tn)
		}
		return nil
	}
	return fmt.Errorf("line %d: tenants: must be %q or a list of tenants", n.Line, TenantsAuto)
}

func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = yamlLineRE.ReplaceAllString(m, "$2")
			if um := yamlUnknownRE.FindStringSubmatch(msgs[i]); um != nil {
				msgs[i] = fmt.Sprintf("unknown field %q", um[1])
			}
		}
		return strings.Join(msgs, "; ")
	}
	return err.Error()
}

// MarshalYAML writes the file's form: auto, else the list (a bare name when that is all).
func (t Tenants) MarshalYAML() (any, error) {
	if t.Auto {
		return TenantsAuto, nil
	}
	out := make([]any, len(t.List))
	for i, tn := range t.List {
		if tn.KafkaNamespace == "" && tn.KafkaAuth == nil {
			out[i] = tn.Name
		} else {
			out[i] = tn
		}
	}
	return out, nil
}

// MarshalJSON is MarshalYAML's form in JSON.
func (t Tenants) MarshalJSON() ([]byte, error) {
	v, _ := t.MarshalYAML()
	return json.Marshal(v)
}

// MultiTenant reports whether any cluster has a `tenants:` key: the tool then names the
// tenant in every report.
func (c *Config) MultiTenant() bool {
	return slices.ContainsFunc(c.Clusters, func(cl Cluster) bool { return cl.Tenants != nil })
}

// ForTenant returns the cluster as seen by tenant t: its offsets topic, short topic names
// and Kafka credentials are the tenant's.
func (c Cluster) ForTenant(t Tenant) Cluster {
	out := c.clone()
	out.Tenants = nil
	out.Tenant = t.Name
	out.KafkaNamespace = t.KafkaNamespace
	if out.KafkaNamespace == "" {
		local := DefaultKafkaNamespace[strings.Index(DefaultKafkaNamespace, "/")+1:]
		if i := strings.Index(c.KafkaNamespace, "/"); i >= 0 {
			local = c.KafkaNamespace[i+1:]
		}
		out.KafkaNamespace = t.Name + "/" + local
	}
	switch {
	case t.KafkaAuth != nil:
		out.KafkaAuth = t.KafkaAuth.clone()
	case out.KafkaAuth != nil && out.KafkaAuth.SASL != nil:
		out.KafkaAuth.SASL.Username = t.Name
	}
	return out
}

// Scope is one tenant on the clusters that have it: the unit every comparison is made in.
// Its clusters are ForTenant views, named as in the config.
type Scope struct {
	Tenant   string
	Clusters []Cluster
	// Named is set when the config has more than one tenant or a `tenants:` key: reports
	// then name the tenant of every row (one-tenant configs print as they always did).
	Named bool
}

// DiscoverFunc lists the tenants of a `tenants: auto` cluster that hold an offsets topic.
type DiscoverFunc func(Cluster) ([]string, error)

// TenantError is a cluster whose tenants could not be listed (`tenants: auto`).
type TenantError struct {
	Cluster string
	Err     error
}

func (e *TenantError) Error() string {
	return fmt.Sprintf("cluster %s: list its tenants (tenants: auto): %v", e.Cluster, e.Err)
}

func (e *TenantError) Unwrap() error { return e.Err }

// Scopes expands the clusters into one Scope per tenant, tenants in the order they first
// appear, each scope's clusters in the config's order. patterns (--tenant: names or globs)
// select tenants; none selects all. A cluster with one `tenant:` is in that tenant's scope.
// discover is called for `tenants: auto` clusters; one that fails is reported in errs and
// left out, the others go on.
func Scopes(cs []Cluster, patterns []string, discover DiscoverFunc) (scopes []Scope, errs []error) {
	idx := map[string]int{}
	all := map[string]bool{}
	named := false
	for _, cl := range cs {
		named = named || cl.Tenants != nil
		var tenants []Tenant
		switch {
		case cl.Tenants == nil:
			tenants = []Tenant{{Name: cl.Tenant, KafkaNamespace: cl.KafkaNamespace, KafkaAuth: cl.KafkaAuth}}
		case cl.Tenants.Auto:
			if discover == nil {
				errs = append(errs, &TenantError{Cluster: cl.Name, Err: errors.New("no admin API to ask")})
				continue
			}
			names, err := discover(cl)
			if err != nil {
				errs = append(errs, &TenantError{Cluster: cl.Name, Err: err})
				continue
			}
			for _, n := range names {
				tenants = append(tenants, Tenant{Name: n})
			}
		default:
			tenants = cl.Tenants.List
		}
		for _, t := range tenants {
			all[t.Name] = true
			if !match.Any(patterns, t.Name) {
				continue
			}
			i, ok := idx[t.Name]
			if !ok {
				i = len(scopes)
				idx[t.Name] = i
				scopes = append(scopes, Scope{Tenant: t.Name})
			}
			scopes[i].Clusters = append(scopes[i].Clusters, cl.ForTenant(t))
		}
	}
	for i := range scopes {
		scopes[i].Named = named || len(all) > 1
	}
	return scopes, errs
}

// ScopeNames returns the tenants of the scopes in order.
func ScopeNames(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = s.Tenant
	}
	return out
}
