//go:build e2e

package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/commands/locate"
	"github.com/kop-offsets/kop-offsets/internal/lab"
	"github.com/kop-offsets/kop-offsets/internal/loader"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/labtest"
)

// TestSeveralBrokersDoctorLocateReload is what several brokers per cluster change for the
// tool on an auth lab (KOP_LAB_BROKERS=2 make e2e-auth):
//   - doctor reads every broker at its own address and every KoP listener, with the token
//     and TLS, and finds nothing at broker level;
//   - locate names owners on both brokers of each cluster;
//   - a group whose offsets bundle is owned by broker 1, the broker NOT behind adminURL
//     (broker 0's https port), is committed through broker 1's SASL listener on scus and
//     reloaded on wus: the unload and lookups that broker 0 redirects to broker 1 carry the
//     token, and wus's KoP then serves the offset.
func TestSeveralBrokersDoctorLocateReload(t *testing.T) {
	l := authLab(t)
	if l.State.Shape.Standalone() {
		t.Skip("needs several brokers per cluster: KOP_LAB_BROKERS=2 make e2e-auth")
	}
	if !l.KoP.Enabled {
		t.Skip("needs KoP (KOP_NAR)")
	}
	waitKoPServesAll(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	group := labtest.Name("auth-brokers")
	p := loader.PartitionFor(group, lab.OffsetsTopicPartitions)
	// On each cluster the group's bundle goes to broker 1 and another bundle to broker 0, so
	// that both brokers own bundles whatever the load manager did.
	for _, c := range l.Clusters {
		b1 := brokerID(c, 1)
		bundle := bundleOf(ctx, t, c, p)
		moveBundle(ctx, t, c, bundle, b1)
		for q := range int32(lab.OffsetsTopicPartitions) {
			if other := bundleOf(ctx, t, c, q); other != bundle {
				moveBundle(ctx, t, c, other, brokerID(c, 0))
				break
			}
		}
		t.Logf("%s: bundle %s of offsets partition %d owned by %s (adminURL is %s)", c.Name, bundle, p, b1, c.Auth.AdminURLTLS)
	}
	waitKoPServesAll(t, l)

	doctorEveryBroker(t, l)
	locateOnBothBrokers(t, l, group, p)

	scus, wus := l.Cluster("scus"), l.Cluster("wus")
	const offset = 42
	if err := lab.CommitThroughKoP(ctx, scus, group, lab.Topic1, 0, offset); err != nil {
		t.Fatalf("commit through broker 1's SASL listener on scus: %v", err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rep, _ := checkJSON(t, publicConfig(t, l), "--group", group, "--persisted-only")
		if val(cellOf(t, rep, group, "wus").Persisted) == "42" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit did not replicate to wus in 3 minutes")
		}
		time.Sleep(2 * time.Second)
	}
	bundle := bundleOf(ctx, t, wus, p)
	if o := ownerOf(ctx, t, wus, bundle); o != brokerID(wus, 1) {
		t.Fatalf("wus: bundle %s owned by %q before the reload, want broker 1 (%s)", bundle, o, brokerID(wus, 1))
	}
	code, out, _ := runCLI(t, publicConfig(t, l), "--timeout", "60s", "--cluster", "wus", "reload", "--group", group, "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("reload on wus of a bundle owned by broker 1 through broker 0's adminURL: exit %d\n%s", code, out)
	}
	if got, ok, err := lab.FetchThroughKoP(ctx, wus, group, lab.Topic1, 0); err != nil || !ok || got != offset {
		t.Errorf("wus serves %d %v %v after reload, want %d", got, ok, err, offset)
	}
	rep, code := checkJSON(t, publicConfig(t, l), "--group", group, "--source", "scus")
	if code != 0 {
		t.Errorf("check after reload: exit %d: %+v", code, rep.Rows)
	}
	t.Logf("wus: bundle %s owned by %s after the reload", bundle, ownerOf(ctx, t, wus, bundle))
}

// doctorEveryBroker runs doctor and wants every broker read at its own address (reachable,
// with KoP and a version), one KoP listener per broker answering, and no broker-level
// finding above info.
func doctorEveryBroker(t *testing.T, l *lab.Lab) {
	t.Helper()
	code, out, _ := runCLI(t, publicConfig(t, l), "--timeout", "60s", "doctor", "-o", "json")
	res := labtest.ParseDoctor(t, []byte(out))
	if code != 0 {
		t.Errorf("doctor: exit %d, want 0", code)
	}
	for _, c := range res.Clusters {
		n := l.Cluster(c.Name).BrokerCount()
		if len(c.Brokers) != n || len(c.KafkaListeners) != n {
			t.Errorf("%s: doctor read %d brokers and %d KoP listeners, want %d of each", c.Name, len(c.Brokers), len(c.KafkaListeners), n)
		}
	}
	labtest.BrokersHealthy(t, res, "the auth lab")
}

// locateOnBothBrokers runs locate for a group of every offsets partition and group, and
// wants every row owned, owners on both brokers of each cluster, and group's owner broker 1.
func locateOnBothBrokers(t *testing.T, l *lab.Lab, group string, p int32) {
	t.Helper()
	args := []string{"--timeout", "60s", "locate", "-o", "json", group}
	for q := range int32(lab.OffsetsTopicPartitions) {
		args = append(args, loader.ProbeGroup(q, lab.OffsetsTopicPartitions))
	}
	code, out, _ := runCLI(t, publicConfig(t, l), args...)
	var rows []locate.Location
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 {
		t.Fatalf("locate: exit %d, %v", code, err)
	}
	owners := map[string]map[string]bool{}
	for _, r := range rows {
		if r.Error != "" || r.Owner == nil {
			t.Errorf("locate row %+v: no owner", r)
			continue
		}
		if owners[r.Cluster] == nil {
			owners[r.Cluster] = map[string]bool{}
		}
		owners[r.Cluster][*r.Owner] = true
		if r.Group == group && *r.Owner != brokerID(l.Cluster(r.Cluster), 1) {
			t.Errorf("%s: locate says %s (partition %d) is owned by %s, want broker 1", r.Cluster, group, p, *r.Owner)
		}
	}
	for _, c := range l.Clusters {
		for i := 0; i < c.BrokerCount(); i++ {
			if !owners[c.Name][brokerID(c, i)] {
				t.Errorf("%s: locate names owners %v, not broker %d", c.Name, owners[c.Name], i)
			}
		}
	}
}

// brokerID is broker i's id as Pulsar lists it: host and plain web port.
func brokerID(c lab.Cluster, i int) string {
	return fmt.Sprintf("%s:%d", lab.Host, c.Broker(i).Ports.Web)
}

// bundleOf is the range of the public/__kafka bundle holding offsets partition p on c.
func bundleOf(ctx context.Context, t *testing.T, c lab.Cluster, p int32) string {
	t.Helper()
	b, err := labtest.PulsarxAdmin(t, c).BundleForTopic(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, p))
	if err != nil {
		t.Fatal(err)
	}
	return b.Range
}

// ownerOf is the broker owning bundle of public/__kafka on c now, from the brokers' lists.
func ownerOf(ctx context.Context, t *testing.T, c lab.Cluster, bundle string) string {
	t.Helper()
	o, ok, err := pulsarx.NewOwners(labtest.PulsarxAdmin(t, c), c.Name).Owner(ctx, lab.MetadataNamespace, bundle)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return o.Broker
}

// moveBundle unloads bundle of public/__kafka on c to broker dest (Pulsar's
// destinationBroker) through c's https adminURL with the token, then looks its partitions
// up until dest owns it.
func moveBundle(ctx context.Context, t *testing.T, c lab.Cluster, bundle, dest string) {
	t.Helper()
	if ownerOf(ctx, t, c, bundle) == dest {
		return
	}
	if err := lab.UnloadBundleTo(ctx, c, bundle, dest); err != nil {
		t.Fatal(err)
	}
	adm := labtest.PulsarxAdmin(t, c)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var parts []int32
		for q := range int32(lab.OffsetsTopicPartitions) {
			if bundleOf(ctx, t, c, q) == bundle {
				parts = append(parts, q)
			}
		}
		for _, q := range parts {
			_, _ = adm.LookupOwner(ctx, pulsarx.PartitionTopic(lab.OffsetsTopic, q))
		}
		now := ownerOf(ctx, t, c, bundle)
		if now == dest {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: bundle %s owned by %q 2 minutes after its unload to %s", c.Name, bundle, now, dest)
		}
		time.Sleep(time.Second)
	}
}
