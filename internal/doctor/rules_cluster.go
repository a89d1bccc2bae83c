package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// pulsarAdmin formats a pulsar-admin command against cl.
func pulsarAdmin(cl *Cluster, args ...string) string {
	return "pulsar-admin --admin-url " + cl.AdminURL + " " + strings.Join(args, " ")
}

// pulsarctl formats a pulsarctl command against cl.
func pulsarctl(cl *Cluster, args ...string) string {
	return "pulsarctl --admin-service-url " + cl.AdminURL + " " + strings.Join(args, " ")
}

// runtimeConfig returns the broker's runtime configuration, nil when it cannot be read
// (it needs super-user rights; doctor then falls back to the config names and Pulsar's
// defaults).
func runtimeConfig(ctx context.Context, cl *Cluster) map[string]string {
	rc, err := cl.Admin.RuntimeConfig(ctx)
	if err != nil {
		return nil
	}
	return rc
}

// checkBroker: the admin API answers (else the cluster is down for every other rule), the
// broker version, and the cluster's own Pulsar name.
func checkBroker(ctx context.Context, r *run, cl *Cluster) []Finding {
	v, err := cl.Admin.BrokerVersion(ctx)
	if err != nil {
		return r.failed(cl, CheckBrokerVersion, "", "get broker version", err)
	}
	r.mu.Lock()
	r.reports[cl.Name].BrokerVersion = v
	r.mu.Unlock()
	ev := map[string]any{"version": v}
	rc := runtimeConfig(ctx, cl)
	if rc != nil {
		if n := rc["clusterName"]; n != "" {
			cl.PulsarName = n
		}
		ev["clusterName"] = rc["clusterName"]
		ev["messagingProtocols"] = rc["messagingProtocols"]
	}
	f := Finding{Severity: SeverityInfo, Check: CheckBrokerVersion, Cluster: cl.Name,
		Message: fmt.Sprintf("Apache Pulsar %s (cluster name %q)", v, cl.PulsarName), Evidence: ev}
	if major(v) > 0 && major(v) < 3 {
		f.Severity = SeverityWarning
		f.Message = fmt.Sprintf("Apache Pulsar %s: before 3.0 a topic unload does not reach KoP; only a bundle unload reloads its group cache", v)
	}
	out := append([]Finding{f}, pulsarHazards(cl, v, rc)...)
	if n, _ := ev["clusterName"].(string); n != "" && cl.ConfigPulsarName != "" && n != cl.ConfigPulsarName {
		out = append(out, clusterNameMismatch(cl, n))
	}
	return out
}

// clusterNameMismatch: the brokers call the cluster pulsarName, the config expects
// cl.ConfigPulsarName. check, watch and failover refuse such a config (replication stats are
// keyed by Pulsar's names: lag would read as diverged and watch's backlog guard would see no
// backlog); the fix is the config's pulsarCluster field.
func clusterNameMismatch(cl *Cluster, pulsarName string) Finding {
	return Finding{Severity: SeverityError, Check: CheckClusterName, Cluster: cl.Name, Subject: pulsarName,
		Message:  fmt.Sprintf("Pulsar calls cluster %s %q (the brokers' clusterName) but the config expects %q: replication stats are keyed by Pulsar's names, so check, watch and failover refuse this config", cl.Name, pulsarName, cl.ConfigPulsarName),
		Evidence: map[string]any{"clusterName": pulsarName, "configPulsarName": cl.ConfigPulsarName},
		Fix:      fmt.Sprintf("set `pulsarCluster: %s` on cluster %s in the kop-offsets config", pulsarName, cl.Name)}
}

func major(v string) int {
	var m int
	if _, err := fmt.Sscanf(v, "%d.", &m); err != nil {
		return 0
	}
	return m
}

// checkBrokerVersions notes clusters that run different Pulsar versions.
func checkBrokerVersions(r *run) []Finding {
	versions := map[string]string{}
	distinct := map[string]bool{}
	for _, c := range r.upClusters() {
		if v := r.reports[c.Name].BrokerVersion; v != "" {
			versions[c.Name] = v
			distinct[v] = true
		}
	}
	if len(distinct) < 2 {
		return nil
	}
	return []Finding{{Severity: SeverityInfo, Check: CheckBrokerVersion,
		Message:  "the clusters run different Pulsar versions",
		Evidence: map[string]any{"versions": versions}}}
}

// checkKoPListener: KoP answers ApiVersions and Metadata on kafkaBootstrap.
func checkKoPListener(ctx context.Context, r *run, cl *Cluster) []Finding {
	if len(cl.KafkaBootstrap) == 0 {
		f := Finding{Severity: SeverityWarning, Check: CheckKoPListener, Cluster: cl.Name,
			Message: "kafkaBootstrap is not configured: whether KoP answers was not checked",
			Fix:     fmt.Sprintf("add kafkaBootstrap (the KoP listeners, host:port) to cluster %s in the kop-offsets config", cl.Name)}
		if cl.FromFlags {
			f.Message, f.Fix = "no --bootstrap given: whether KoP answers was not checked", "give --bootstrap (the KoP listeners, host:port)"
		}
		return []Finding{f}
	}
	pctx, cancel := context.WithTimeout(ctx, r.opts.KafkaTimeout)
	defer cancel()
	type res struct {
		p   KafkaProbe
		err error
	}
	ch := make(chan res, 1)
	go func() {
		p, err := r.opts.Kafka.Probe(pctx, *cl)
		ch <- res{p, err}
	}()
	var got res
	select {
	case got = <-ch:
	case <-pctx.Done():
		got.err = fmt.Errorf("no answer within %s: %w", r.opts.KafkaTimeout, pctx.Err())
	}
	answers := got.err == nil
	r.mu.Lock()
	r.reports[cl.Name].KoPAnswers = &answers
	r.reports[cl.Name].KafkaListeners = got.p.Listeners
	r.mu.Unlock()
	if answers {
		out := append(checkKoPVersion(r, cl, got.p.MaxVersions), checkKoPBrokers(r, cl, got.p)...)
		return append(out, checkOffsetsServed(ctx, r, cl)...)
	}
	boot := strings.Join(cl.KafkaBootstrap, ",")
	if f, ok := saslRefusal(cl, boot, got.err); ok {
		return []Finding{f}
	}
	ev := map[string]any{"bootstrap": cl.KafkaBootstrap, "error": got.err.Error(), "timeout": r.opts.KafkaTimeout.String()}
	var pe *KafkaProbeError
	if errors.As(got.err, &pe) {
		ev["stage"] = pe.Stage
		if len(pe.Dial) > 0 {
			ev["dial"] = pe.Dial
		}
	}
	// The row names the cluster and the listener: the fix says "its" (issue 48: each once).
	fix := "its broker.conf needs messagingProtocols=kafka, the KoP .nar, kafkaListeners and kafkaAdvertisedListeners with it; then its broker log"
	if r.up(cl) {
		if rc := runtimeConfig(ctx, cl); rc != nil {
			mp := rc["messagingProtocols"]
			ev["messagingProtocols"] = mp
			ev["protocolHandlerDirectory"] = rc["protocolHandlerDirectory"]
			if !strings.Contains(mp, "kafka") {
				fix = fmt.Sprintf("KoP is not loaded on %s (messagingProtocols=%q): put the KoP .nar in protocolHandlerDirectory, set messagingProtocols=kafka and kafkaListeners=PLAINTEXT://%s in broker.conf, restart the brokers; verify: %s",
					cl.Name, mp, cl.KafkaBootstrap[0], pulsarAdmin(cl, "brokers get-runtime-config"))
			}
		}
	}
	return []Finding{{Severity: SeverityError, Check: CheckKoPListener, Cluster: cl.Name, Subject: boot,
		Message: "KoP does not answer at " + boot, Evidence: ev, Fix: fix}}
}

// saslRefusal is the finding for a KoP listener that answered but refused the configured
// SASL credentials or mechanism: the listener is up, so "KoP does not answer" and its fix
// (listeners, the NAR) would send the operator the wrong way.
func saslRefusal(cl *Cluster, boot string, err error) (Finding, bool) {
	var why string
	switch {
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		why = "does not accept the configured SASL mechanism (KoP 3.1 offers PLAIN and OAUTHBEARER only, as saslAllowedMechanisms allows; not SCRAM)"
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState):
		why = "refused the configured SASL credentials"
	default:
		return Finding{}, false
	}
	return Finding{Severity: SeverityError, Check: CheckKoPListener, Cluster: cl.Name, Subject: boot,
		Message:  fmt.Sprintf("KoP on %s (%s) %s", boot, cl.Name, why),
		Evidence: map[string]any{"bootstrap": cl.KafkaBootstrap, "error": err.Error()},
		Fix: fmt.Sprintf("set kafkaAuth.sasl of %s in the kop-offsets config to a mechanism the brokers' saslAllowedMechanisms lists; with PLAIN the password is \"token:<a JWT the brokers accept>\" (any username); test the token with %s",
			cl.Name, pulsarAdmin(cl, "tenants list"))}, true
}

// checkKoPBrokers: KoP answered, but maybe not on every listener: each bootstrap address
// accepts connections, each KoP broker its Metadata advertises answers ApiVersions, with the
// same versions as the others, and KoP lists as many brokers as Pulsar has active ones.
func checkKoPBrokers(r *run, cl *Cluster, p KafkaProbe) []Finding {
	var out []Finding
	for _, addr := range slices.Sorted(maps.Keys(p.Refused)) {
		out = append(out, Finding{Severity: SeverityError, Check: CheckKoPListener, Cluster: cl.Name, Subject: addr,
			Message:  fmt.Sprintf("the kafkaBootstrap address %s of %s refuses connections, while another one answers: a client given only this address cannot connect", addr, cl.Name),
			Evidence: map[string]any{"address": addr, "error": p.Refused[addr]},
			Fix:      fmt.Sprintf("start KoP on the broker behind %s (its kafkaListeners), or remove the address from kafkaBootstrap of %s in the kop-offsets config", addr, cl.Name)})
	}
	versions := map[string]string{}
	for _, l := range p.Listeners {
		if l.Error != "" {
			out = append(out, Finding{Severity: SeverityError, Check: CheckKoPListener, Cluster: cl.Name, Subject: l.Address,
				Message:  fmt.Sprintf("KoP broker %d of %s, advertised as %s, does not answer ApiVersions: clients sent to it (as a group's coordinator or a partition's leader) fail", l.NodeID, cl.Name, l.Address),
				Evidence: map[string]any{"node": l.NodeID, "address": l.Address, "error": l.Error},
				Fix:      fmt.Sprintf("check that %s is the broker's kafkaAdvertisedListeners and reachable from the clients, and the broker's log", l.Address)})
			continue
		}
		versions[l.Address] = fmt.Sprint(l.MaxVersions)
	}
	if len(slices.Compact(slices.Sorted(maps.Values(versions)))) > 1 {
		out = append(out, Finding{Severity: SeverityWarning, Check: CheckKoPListener, Cluster: cl.Name,
			Message:  fmt.Sprintf("the KoP brokers of %s answer different request versions: they run different KoP versions", cl.Name),
			Evidence: map[string]any{"maxVersions": versions}})
	}
	r.mu.Lock()
	bc, known := r.brokers[cl.Name]
	r.mu.Unlock()
	if known && p.Listeners != nil && len(p.Listeners) < bc.active && bc.withoutKoP == 0 {
		// KoP's Metadata lists the brokers that registered a "kafka" protocol (KopEventManager);
		// the brokers without it were not named by their runtime configuration (unreadable).
		out = append(out, Finding{Severity: SeverityError, Check: CheckKoPListener, Cluster: cl.Name,
			Message:  fmt.Sprintf("KoP lists %d brokers of %s but Pulsar has %d active brokers: KoP is not loaded on %d of them", len(p.Listeners), cl.Name, bc.active, bc.active-len(p.Listeners)),
			Evidence: map[string]any{"kopBrokers": p.Listeners, "activeBrokers": bc.active},
			Fix:      fmt.Sprintf("compare messagingProtocols on every broker: %s, then curl each broker's /admin/v2/brokers/configuration/runtime", pulsarAdmin(cl, "brokers list", cl.PulsarName))})
	}
	return out
}

// checkOffsetsServed: KoP serves every offsets partition (it drops the load of a partition
// unloaded and taken back quickly: docs/kop-facts.md; every group of it then gets
// NOT_COORDINATOR, consumers can neither join nor commit).
func checkOffsetsServed(ctx context.Context, r *run, cl *Cluster) []Finding {
	pp, ok := r.opts.Kafka.(PartitionProber)
	if !ok || !r.up(cl) {
		return nil
	}
	n, err := cl.Admin.OffsetsTopicPartitions(ctx, cl.Tenant, cl.MetadataNamespace)
	if err != nil || n <= 0 {
		return nil // reported by the offsets-topic check
	}
	pctx, cancel := context.WithTimeout(ctx, 2*r.opts.KafkaTimeout)
	defer cancel()
	unserved, err := pp.ProbePartitions(pctx, *cl, n)
	if err != nil || len(unserved) == 0 {
		return nil
	}
	parts := slices.Sorted(maps.Keys(unserved))
	ev := map[string]any{"answers": unserved, "probeTimeout": (2 * r.opts.KafkaTimeout).String()}
	var list []string
	for _, p := range parts {
		list = append(list, fmt.Sprint(p))
	}
	return []Finding{{Severity: SeverityError, Check: CheckOffsetsServed, Cluster: cl.Name, Subject: cl.OffsetsTopic(),
		Message:  fmt.Sprintf("KoP does not serve offsets partitions %s of %s: their groups can neither join nor commit", strings.Join(list, ", "), cl.Name),
		Evidence: ev,
		Fix:      fmt.Sprintf("kop-offsets --cluster %s repair --yes   (reloads their bundles and waits until every partition answers; or: kop-offsets reload --cluster %s --partition %s --yes)", cl.Name, cl.Name, strings.Join(list, ",")),
	}}
}

// checkPeersRegistered: every cluster knows every other one (clusters list), which
// replication needs.
func checkPeersRegistered(ctx context.Context, r *run) []Finding {
	var out []Finding
	for _, cl := range r.upClusters() {
		known, err := cl.Admin.Clusters(ctx)
		if err != nil {
			out = append(out, r.failed(cl, CheckPeerRegistered, "", "list clusters", err)...)
			continue
		}
		for _, p := range r.clusters {
			if p == cl || slices.Contains(known, p.PulsarName) {
				continue
			}
			out = append(out, Finding{Severity: SeverityError, Check: CheckPeerRegistered, Cluster: cl.Name, Peer: p.Name,
				Subject:      p.PulsarName,
				Message:      fmt.Sprintf("%s does not know cluster %s: nothing can replicate to it", cl.Name, p.PulsarName),
				Evidence:     map[string]any{"clusters": known},
				Fix:          pulsarAdmin(cl, "clusters create", p.PulsarName, "--url", p.AdminURL, "--broker-url", p.ServiceURL),
				FixPulsarctl: pulsarctl(cl, "clusters add", p.PulsarName, "--url", p.AdminURL, "--broker-url", p.ServiceURL),
			})
		}
	}
	return out
}

// checkOffsetsTopic: the offsets topic exists everywhere, with the same partition count.
func checkOffsetsTopic(ctx context.Context, r *run) []Finding {
	var out []Finding
	counts := map[string]int32{}
	var maxN int32
	var missing []*Cluster
	for _, cl := range r.upClusters() {
		n, err := cl.Admin.OffsetsTopicPartitions(ctx, cl.Tenant, cl.MetadataNamespace)
		switch {
		case isNotFound(err):
			missing = append(missing, cl)
			continue
		case err != nil:
			out = append(out, r.failed(cl, CheckOffsetsTopicExists, cl.OffsetsTopic(), "read the offsets topic", err)...)
			continue
		}
		counts[cl.Name] = n
		maxN = max(maxN, n)
		r.mu.Lock()
		r.reports[cl.Name].OffsetsPartitions = &n
		r.mu.Unlock()
	}
	for _, cl := range missing {
		n := maxN
		if n == 0 {
			n = 50 // KoP's offsetsTopicNumPartitions default
		}
		out = append(out, Finding{Severity: SeverityError, Check: CheckOffsetsTopicExists, Cluster: cl.Name, Subject: cl.OffsetsTopic(),
			Message:      fmt.Sprintf("the offsets topic %s does not exist (or is not partitioned) on %s: KoP creates it at start-up when it manages its system namespaces; is KoP loaded, with tenant %q and metadataNamespace %q?", cl.OffsetsTopic(), cl.Name, cl.Tenant, cl.MetadataNamespace),
			Evidence:     map[string]any{"partitionsElsewhere": counts},
			Fix:          pulsarAdmin(cl, "topics create-partitioned-topic", cl.OffsetsTopic(), "--partitions", fmt.Sprint(n)),
			FixPulsarctl: pulsarctl(cl, "topics create", cl.OffsetsTopic(), fmt.Sprint(n)),
		})
	}
	if len(counts) < 2 {
		return out
	}
	for _, cl := range r.upClusters() {
		n, ok := counts[cl.Name]
		if !ok || n == maxN {
			continue
		}
		out = append(out, Finding{Severity: SeverityError, Check: CheckOffsetsPartitions, Cluster: cl.Name, Subject: cl.OffsetsTopic(),
			Message:      fmt.Sprintf("the offsets topic has %d partitions on %s but %d elsewhere: a group is stored in a different partition on each cluster, so replicated commits are never loaded for it (growing the topic moves groups whose partition changes: do it before they commit, and set offsetsTopicNumPartitions=%d in broker.conf everywhere)", n, cl.Name, maxN, maxN),
			Evidence:     map[string]any{"partitions": counts},
			Fix:          pulsarAdmin(cl, "topics update-partitioned-topic", cl.OffsetsTopic(), "--partitions", fmt.Sprint(maxN)),
			FixPulsarctl: pulsarctl(cl, "topics update", cl.OffsetsTopic(), fmt.Sprint(maxN)),
		})
	}
	return out
}

// union returns the sorted union of a and b.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// missingFrom returns the elements of want not in have.
func missingFrom(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// checkMetadataReplication: <tenant>/<metadataNamespace> replicates to every cluster, on
// every cluster (both directions).
func checkMetadataReplication(ctx context.Context, r *run) []Finding {
	var out []Finding
	all := pulsarNames(r.clusters)
	if len(all) < 2 {
		return nil
	}
	for _, cl := range r.upClusters() {
		out = append(out, namespaceReplication(ctx, r, cl, cl.MetadataNamespacePath(), all, CheckMetadataNamespace,
			"offsets committed on %s never reach %s, and KoP there serves its own stale offsets")...)
	}
	return out
}

// namespaceReplication checks that ns on cl replicates to all (Pulsar names); consequence
// is a format with the cluster and the missing clusters.
func namespaceReplication(ctx context.Context, r *run, cl *Cluster, ns string, all []string, check, consequence string) []Finding {
	rc, err := cl.Admin.NamespaceReplicationClusters(ctx, ns)
	if isNotFound(err) {
		return []Finding{{Severity: SeverityError, Check: check, Cluster: cl.Name, Subject: ns,
			Message:      fmt.Sprintf("namespace %s does not exist on %s", ns, cl.Name),
			Fix:          pulsarAdmin(cl, "namespaces create", ns, "--clusters", strings.Join(all, ",")),
			FixPulsarctl: pulsarctl(cl, "namespaces create", ns, "--clusters", strings.Join(all, ",")),
		}}
	}
	if err != nil {
		return r.failed(cl, check, ns, "get the replication clusters of "+ns, err)
	}
	miss := missingFrom(all, rc)
	if len(miss) == 0 {
		return nil
	}
	want := union(rc, all)
	f := Finding{Severity: SeverityError, Check: check, Cluster: cl.Name, Subject: ns,
		Message: fmt.Sprintf("%s on %s does not replicate to %s: "+consequence, ns, cl.Name, strings.Join(miss, ","),
			cl.Name, strings.Join(miss, ",")),
		Evidence:     map[string]any{"replicationClusters": rc, "expected": all, "missing": miss},
		Fix:          pulsarAdmin(cl, "namespaces set-clusters", ns, "--clusters", strings.Join(want, ",")),
		FixPulsarctl: pulsarctl(cl, "namespaces set-clusters", ns, "--clusters", strings.Join(want, ",")),
	}
	if len(miss) == 1 {
		for _, p := range r.clusters {
			if p.PulsarName == miss[0] && p != cl {
				f.Peer = p.Name
			}
		}
	}
	return []Finding{f}
}

// checkTenantAllowed: the metadata tenant allows every cluster, on every cluster.
func checkTenantAllowed(ctx context.Context, r *run) []Finding {
	var out []Finding
	all := pulsarNames(r.clusters)
	if len(all) < 2 {
		return nil
	}
	for _, cl := range r.upClusters() {
		allowed, err := cl.Admin.TenantAllowedClusters(ctx, cl.Tenant)
		if err != nil {
			if isNotFound(err) {
				out = append(out, Finding{Severity: SeverityError, Check: CheckTenantAllowed, Cluster: cl.Name, Subject: cl.Tenant,
					Message:      fmt.Sprintf("tenant %s does not exist on %s", cl.Tenant, cl.Name),
					Fix:          pulsarAdmin(cl, "tenants create", cl.Tenant, "--allowed-clusters", strings.Join(all, ",")),
					FixPulsarctl: pulsarctl(cl, "tenants create", cl.Tenant, "--allowed-clusters", strings.Join(all, ",")),
				})
				continue
			}
			out = append(out, r.failed(cl, CheckTenantAllowed, cl.Tenant, "get tenant "+cl.Tenant, err)...)
			continue
		}
		miss := missingFrom(all, allowed)
		if len(miss) == 0 {
			continue
		}
		want := union(allowed, all)
		out = append(out, Finding{Severity: SeverityError, Check: CheckTenantAllowed, Cluster: cl.Name, Subject: cl.Tenant,
			Message:      fmt.Sprintf("tenant %s on %s does not allow %s: its namespaces cannot replicate there", cl.Tenant, cl.Name, strings.Join(miss, ",")),
			Evidence:     map[string]any{"allowedClusters": allowed, "expected": all, "missing": miss},
			Fix:          pulsarAdmin(cl, "tenants update", cl.Tenant, "--allowed-clusters", strings.Join(want, ",")),
			FixPulsarctl: pulsarctl(cl, "tenants update", cl.Tenant, "--allowed-clusters", strings.Join(want, ",")),
		})
	}
	return out
}
