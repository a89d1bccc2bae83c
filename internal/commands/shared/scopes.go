package shared

import (
	"slices"

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

// ScopeClusterNames are the clusters of the scopes, each once, in the order they appear.
func ScopeClusterNames(scopes []config.Scope) []string {
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
