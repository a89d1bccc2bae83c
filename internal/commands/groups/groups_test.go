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
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/kop"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/survey"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/fakes"
)

// groupsOf runs groups --persisted-only on scus and wus (wus's offsets topic failing with
// wusErr when set) and returns stdout, stderr and the exit code.
func groupsOf(t *testing.T, wusErr error) (string, string, int) {
	t.Helper()
	commit := func(g string) kop.OffsetCommit {
		return kop.OffsetCommit{Group: g, Topic: "persistent://public/default/topic-1", Offset: 5, CommitTime: time.UnixMilli(1700000000000)}
	}
	readers := map[string]*fakes.MemReader{
		"scus": fakes.NewMemReader(8).Commit(commit("orders"), commit("billing")),
		"wus":  fakes.NewMemReader(8).Commit(commit("orders")),
	}
	readers["wus"].Err = wusErr
	ios, _, out, errOut := iostreams.Test()
	opts := &Options{IO: ios, Format: output.Table, PersistedOnly: true,
		Clusters: func() ([]config.Cluster, error) {
			return []config.Cluster{{Name: "scus", KafkaNamespace: "public/default"}, {Name: "wus", KafkaNamespace: "public/default", ServiceURL: "pulsar://127.0.0.1:26650"}}, nil
		},
		Connect: func(cl config.Cluster, _ sources.SourceOptions) (survey.Cluster, func(), error) {
			return survey.Cluster{Name: cl.Name, KafkaNamespace: cl.KafkaNamespace, Reader: readers[cl.Name], URLs: explain.URLs(cl)}, nil, nil
		}}
	err := groupsRun(context.Background(), opts)
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

func TestGroupsExitCodes(t *testing.T) {
	t.Run("listed", func(t *testing.T) {
		out, errOut, code := groupsOf(t, nil)
		if code != 0 || errOut != "" {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		for _, want := range []string{"orders\t", "billing\t", "\twus\tpersisted\t"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("a cluster down", func(t *testing.T) {
		down := errors.New("cluster wus: get partitioned metadata of persistent://public/__kafka/__consumer_offsets: unreachable: dial tcp 127.0.0.1:28080: connect: connection refused")
		out, errOut, code := groupsOf(t, down)
		// The error is explained: the cluster, the endpoint (its URL from the config) and the cause.
		if code != 3 || !strings.Contains(errOut, "cluster wus: pulsar pulsar://127.0.0.1:26650: connection refused") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		// What could be read is still listed.
		if !strings.Contains(out, "billing\t") || !strings.Contains(out, "\tscus\tpersisted\t") {
			t.Errorf("scus's groups not listed:\n%s", out)
		}
	})
}
