//go:build topology

package topology_test

// The user's story's helpers are labtest's (internal/testsupport/labtest, labtest/labcli), shared
// with the KoP suite; what is here is this suite's own.

import (
	"context"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest/labcli"
)

// cli runs kop-offsets on l with a --timeout of 20 s for check, repair and watch: a lab of
// several brokers per cluster answers slower than two standalones.
func cli(l *lab.Lab) labcli.CLI { return labcli.CLI{Lab: l, Timeout: "20s"} }

// brokerOf returns the index of the broker of c that owns offsets partition p now (a lookup,
// which assigns an owner to an unowned bundle), -1 when none of c's brokers matches.
func brokerOf(ctx context.Context, t *testing.T, c lab.Cluster, p int32) int {
	t.Helper()
	o, err := labtest.PulsarxAdmin(t, c).LookupOwner(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, p))
	if err != nil {
		t.Fatalf("%s: look up offsets partition %d: %v", c.Name, p, err)
	}
	for i := range c.BrokerCount() {
		b := c.Broker(i)
		if o.HTTPURL == b.AdminURL || o.BrokerURL == b.ServiceURL {
			return i
		}
	}
	t.Logf("%s: offsets partition %d owned by %+v, none of the lab's brokers", c.Name, p, o)
	return -1
}
