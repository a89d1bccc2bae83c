//go:build e2e || topology

package lab_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labrun"
)

// One lab per go test run: Ensure starts it (or reuses a running one); Main releases it and
// the last test process out stops it unless it is kept (kop-lab up, KOP_LAB_KEEP=1). The e2e
// tests (tag e2e) and the topology tests (tag topology, make e2e-topology) share this.
func TestMain(m *testing.M) { labrun.Main(m) }

func ensureLab(t *testing.T) *lab.Lab {
	t.Helper()
	return labrun.MustEnsure(t, 20*time.Minute)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func mustTopic(t *testing.T, s string) utils.TopicName {
	t.Helper()
	tn, err := utils.GetTopicName(s)
	if err != nil {
		t.Fatal(err)
	}
	return *tn
}
