package groups

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/commands/sources"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// TestGroupsPerTenant: each tenant's offsets topic lists its own groups; a tenant whose
// topic cannot be read is named and the other is listed all the same.
func TestGroupsPerTenant(t *testing.T) {
	commit := func(tenant, g string) kop.OffsetCommit {
		return kop.OffsetCommit{Group: g, Topic: "persistent://" + tenant + "/default/topic-1", Offset: 5, CommitTime: time.UnixMilli(1700000000000)}
	}
	readers := map[string]*fakes.MemReader{
		"acme/scus":    fakes.NewMemReader(8).Commit(commit("acme", "orders")),
		"billing/scus": fakes.NewMemReader(8).Commit(commit("billing", "invoices")),
	}
	readers["billing/scus"].Err = errors.New("403 Forbidden")
	view := func(tenant string) config.Cluster {
		return config.Cluster{Name: "scus", Tenant: tenant, KafkaNamespace: tenant + "/default"}
	}
	ios, _, out, errOut := iostreams.Test()
	opts := &Options{IO: ios, Format: output.Table, PersistedOnly: true,
		Scopes: func() ([]config.Scope, error) {
			return []config.Scope{{Tenant: "acme", Named: true, Clusters: []config.Cluster{view("acme")}},
				{Tenant: "billing", Named: true, Clusters: []config.Cluster{view("billing")}}}, nil
		},
		Connect: func(cl config.Cluster, _ sources.SourceOptions) (survey.Cluster, func(), error) {
			return survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Reader: readers[cl.Tenant+"/"+cl.Name]}, nil, nil
		}}
	code := cmdutil.ExitCode(groupsRun(context.Background(), opts))
	if code != 3 || !strings.Contains(errOut.String(), "tenant billing: cluster scus") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out.String(), "TENANT\tGROUP\t") || !strings.Contains(out.String(), "acme\torders\t") || strings.Contains(out.String(), "invoices") {
		t.Errorf("stdout:\n%s", out)
	}
}
