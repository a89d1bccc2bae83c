// Package scope resolves which clusters and tenants a command works on (--cluster,
// --tenant): the selected clusters, every configured cluster they are compared with, and the
// one target of a writing command.
package scope

import (
	"slices"
	"strings"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
)

// ScopesOf returns the tenants' scopes from scopes (the Factory's), or, where a command is
// given clusters only (tests, nil scopes), those clusters as one unnamed scope.
func ScopesOf(scopes func() ([]config.Scope, error), clusters func() ([]config.Cluster, error)) ([]config.Scope, error) {
	if scopes != nil {
		return scopes()
	}
	cls, err := clusters()
	if err != nil {
		return nil, err
	}
	return []config.Scope{{Clusters: cls}}, nil
}

// ClusterNames are the clusters of the scopes, each once, in the order they appear.
func ClusterNames(scopes []config.Scope) []string {
	var out []string
	for _, sc := range scopes {
		for _, cl := range sc.Clusters {
			if !slices.Contains(out, cl.Name) {
				out = append(out, cl.Name)
			}
		}
	}
	return out
}

// TenantFlag is the --tenant argument that selects tenant in a command line printed as a
// hint or a fix; empty for a report that does not name tenants.
func TenantFlag(tenant string) string {
	if tenant == "" {
		return ""
	}
	return " --tenant " + tenant
}

// TenantTarget is a writing command's work in one tenant: the clusters it writes to and
// every configured cluster of that tenant (what they are compared with).
type TenantTarget struct {
	config.Scope // the clusters written to
	All          []config.Cluster
}

// TenantTargets returns, per tenant --tenant selects, the selected clusters (--cluster) and
// every configured cluster of that tenant.
func TenantTargets(f *cmdutil.Factory) func() ([]TenantTarget, error) {
	return func() ([]TenantTarget, error) {
		sel, err := f.Scopes()
		if err != nil {
			return nil, err
		}
		all, err := f.AllScopes()
		if err != nil {
			return nil, err
		}
		out := make([]TenantTarget, 0, len(sel))
		for _, sc := range sel {
			tt := TenantTarget{Scope: sc}
			for _, a := range all {
				if a.Tenant == sc.Tenant {
					tt.All = a.Clusters
				}
			}
			out = append(out, tt)
		}
		return out, nil
	}
}

// allClusters is every configured cluster as the tenant of sel sees it: the config's
// clusters for a config without tenants, else that tenant's scope over all of them.
func allClusters(f *cmdutil.Factory, sel []config.Cluster) ([]config.Cluster, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	if (!cfg.MultiTenant() && len(f.Flags.Tenants) == 0) || len(sel) == 0 {
		return cfg.Clusters, nil
	}
	all, err := f.AllScopes()
	if err != nil {
		return nil, err
	}
	for _, sc := range all {
		if sc.Tenant == sel[0].Tenant {
			return sc.Clusters, nil
		}
	}
	return sel, nil
}

// TenantConfig is the config as a command that works on one tenant sees it: the config
// itself without tenants; else every cluster's view of the one tenant --tenant selects
// (several: exit 2, naming them).
func TenantConfig(f *cmdutil.Factory) func() (*config.Config, error) {
	return func() (*config.Config, error) {
		cfg, err := f.Config()
		if err != nil || (!cfg.MultiTenant() && len(f.Flags.Tenants) == 0) {
			return cfg, err
		}
		all, err := f.AllScopes()
		if err != nil {
			return nil, err
		}
		if len(all) != 1 {
			return nil, cmdutil.UsageErrorf("this command works on one tenant at a time and the clusters have %d (%s): select one with --tenant", len(all), strings.Join(config.ScopeNames(all), ", "))
		}
		return &config.Config{Path: cfg.Path, Clusters: all[0].Clusters}, nil
	}
}

// NamedTenant is the one tenant a command that works on one tenant at a time names in its
// output (labels, logs): "" for a config without tenants.
func NamedTenant(f *cmdutil.Factory) (string, error) {
	cfg, err := f.Config()
	if err != nil || (!cfg.MultiTenant() && len(f.Flags.Tenants) == 0) {
		return "", err
	}
	scopes, err := f.Scopes()
	if err != nil {
		return "", err
	}
	if len(scopes) != 1 || !scopes[0].Named {
		return "", nil // f.Clusters refuses several; a single tenant in all is not named
	}
	return scopes[0].Tenant, nil
}

// Target resolves the one cluster a writing command works on (--cluster; the only
// configured cluster when there is one) and returns it with every configured cluster.
func Target(f *cmdutil.Factory) (config.Cluster, []config.Cluster, error) {
	cfg, err := f.Config()
	if err != nil {
		return config.Cluster{}, nil, err
	}
	sel, err := f.Clusters()
	if err != nil {
		return config.Cluster{}, nil, err
	}
	if len(sel) != 1 {
		return config.Cluster{}, nil, cmdutil.UsageErrorf("reload writes to one cluster: select it with --cluster NAME (configured: %s)", strings.Join(config.Names(cfg.Clusters), ", "))
	}
	all, err := allClusters(f, sel)
	return sel[0], all, err
}

// Targets returns the clusters a command selected (--cluster; default all) with every
// configured cluster.
func Targets(f *cmdutil.Factory) func() ([]config.Cluster, []config.Cluster, error) {
	return func() ([]config.Cluster, []config.Cluster, error) {
		sel, err := f.Clusters()
		if err != nil {
			return nil, nil, err
		}
		all, err := allClusters(f, sel)
		return sel, all, err
	}
}
