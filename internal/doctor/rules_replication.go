package doctor

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// replicatorState collects the state of the replicators from one cluster to one peer over
// the offsets partitions.
type replicatorState struct {
	missing      []int32
	disconnected []int32
	backlog      map[int32]int64
	delay        map[int32]int64
	// idle are the connected partitions with a backlog whose replicator sends nothing
	// (msgRateOut 0).
	idle []int32
}

// checkOffsetsReplicators: for every offsets partition of every cluster, the replicator to
// each peer the metadata namespace replicates to exists, is connected, and keeps up.
func checkOffsetsReplicators(ctx context.Context, r *run) []Finding {
	var out []Finding
	settled := false
	for _, cl := range r.upClusters() {
		n, err := cl.Admin.OffsetsTopicPartitions(ctx, cl.Tenant, cl.MetadataNamespace)
		if err != nil || n <= 0 {
			continue // reported by checkOffsetsTopic
		}
		repl, err := cl.Admin.NamespaceReplicationClusters(ctx, cl.MetadataNamespacePath())
		if err != nil {
			continue // reported by checkMetadataReplication
		}
		var peers []*Cluster
		for _, p := range r.clusters {
			if p != cl && slices.Contains(repl, p.PulsarName) {
				peers = append(peers, p)
			}
		}
		peers, synced := syncModel(ctx, r.orig[cl.Name].Admin, cl, peers)
		out = append(out, synced...)
		if len(peers) == 0 {
			continue
		}
		ttl := effectiveTTL(ctx, cl)
		read := func(parts []int32) (map[int32]map[string]pulsarx.Replication, []Finding) {
			got := map[int32]map[string]pulsarx.Replication{}
			for _, i := range parts {
				topic := pulsarx.PartitionTopic(cl.OffsetsTopic(), i)
				st, err := cl.Admin.ReplicationStats(ctx, topic)
				if err != nil {
					return got, r.failed(cl, CheckOffsetsReplicator, topic, "get the stats of "+topic, err)
				}
				got[i] = st
			}
			return got, nil
		}
		all := make([]int32, n)
		for i := range all {
			all[i] = int32(i)
		}
		stats, fail := read(all)
		if fail != nil {
			out = append(out, fail...)
			continue
		}
		states := classifyReplicators(peers, all, stats)
		// A replicator starts when its topic is loaded (reading the stats loads it): give
		// missing or disconnected ones one more look.
		var again []int32
		for _, s := range states {
			again = append(again, s.missing...)
			again = append(again, s.disconnected...)
		}
		slices.Sort(again)
		again = slices.Compact(again)
		if len(again) > 0 && r.opts.ReplicatorSettle > 0 {
			if !settled {
				select {
				case <-ctx.Done():
				case <-time.After(r.opts.ReplicatorSettle):
				}
				settled = true
			}
			if st2, fail := read(again); fail == nil {
				for i, s := range st2 {
					stats[i] = s
				}
				states = classifyReplicators(peers, all, stats)
			}
		}
		for _, p := range peers {
			out = append(out, replicatorFindings(r, cl, p, n, states[p.Name], ttl)...)
		}
	}
	return out
}

func classifyReplicators(peers []*Cluster, parts []int32, stats map[int32]map[string]pulsarx.Replication) map[string]*replicatorState {
	states := map[string]*replicatorState{}
	for _, p := range peers {
		s := &replicatorState{backlog: map[int32]int64{}, delay: map[int32]int64{}}
		states[p.Name] = s
		for _, i := range parts {
			rep, ok := stats[i][p.PulsarName]
			switch {
			case !ok:
				s.missing = append(s.missing, i)
			case !rep.Connected:
				s.disconnected = append(s.disconnected, i)
			}
			if ok && rep.ReplicationBacklog > 0 {
				s.backlog[i] = rep.ReplicationBacklog
				s.delay[i] = rep.ReplicationDelayInSeconds
				if rep.Connected && rep.MsgRateOut == 0 {
					s.idle = append(s.idle, i)
				}
			}
		}
	}
	return states
}

func replicatorFindings(r *run, cl, p *Cluster, n int32, s *replicatorState, ttl time.Duration) []Finding {
	var out []Finding
	topic := cl.OffsetsTopic()
	if len(s.missing) > 0 {
		all := pulsarNames(r.clusters)
		f := Finding{Severity: SeverityError, Check: CheckOffsetsReplicator, Cluster: cl.Name, Peer: p.Name, Subject: topic,
			Message: fmt.Sprintf("no replicator from %s to %s on %d of %d offsets partitions %v, although %s replicates to %s",
				cl.Name, p.Name, len(s.missing), n, s.missing, cl.MetadataNamespacePath(), p.PulsarName),
			Evidence:     map[string]any{"partitions": s.missing},
			Fix:          pulsarAdmin(cl, "namespaces set-clusters", cl.MetadataNamespacePath(), "--clusters", strings.Join(all, ",")),
			FixPulsarctl: pulsarctl(cl, "namespaces set-clusters", cl.MetadataNamespacePath(), "--clusters", strings.Join(all, ",")),
		}
		if v := r.reports[cl.Name].BrokerVersion; major(v) > 0 && major(v) < 3 {
			// Seen on 2.10.1: after the namespace's (or a removed topic-level) replication
			// changed, a loaded topic got its replicators only when loaded again.
			f.Message += fmt.Sprintf(": Apache Pulsar %s creates the replicators of a topic already loaded only at its periodic replication check (replicationPolicyCheckDurationSeconds, 600 s by default) or when the topic is loaded again", v)
			f.Fix = pulsarAdmin(cl, "topics unload", pulsarx.PartitionTopic(topic, s.missing[0])) + "  # for each partition listed, on " + cl.Name
			f.FixPulsarctl = ""
		}
		out = append(out, f)
	}
	if len(s.disconnected) > 0 {
		var sum int64
		for _, i := range s.disconnected {
			sum += s.backlog[i]
		}
		f := Finding{Severity: SeverityError, Check: CheckOffsetsReplicator, Cluster: cl.Name, Peer: p.Name, Subject: topic,
			Message: fmt.Sprintf("the replicator from %s to %s is disconnected on %d of %d offsets partitions %v: commits made on %s do not reach %s",
				cl.Name, p.Name, len(s.disconnected), n, s.disconnected, cl.Name, p.Name),
			Evidence: map[string]any{"partitions": s.disconnected, "backlog": sum, "peerReachable": r.up(p)},
		}
		if !r.up(p) {
			f.Fix = fmt.Sprintf("bring %s back (its admin API does not answer either); the replicator reconnects by itself and sends the backlog", p.Name)
		} else {
			f.Fix = pulsarAdmin(cl, "clusters update", p.PulsarName, "--url", p.AdminURL, "--broker-url", p.ServiceURL)
			f.FixPulsarctl = pulsarctl(cl, "clusters update", p.PulsarName, "--url", p.AdminURL, "--broker-url", p.ServiceURL)
			f.Message += fmt.Sprintf(" (check that cluster %s's registration on %s points at its brokers: %s)", p.PulsarName, cl.Name, pulsarAdmin(cl, "clusters get", p.PulsarName))
		}
		out = append(out, f)
	}
	if len(s.backlog) > 0 {
		var sum, maxDelay int64
		parts := make([]int32, 0, len(s.backlog))
		for i, b := range s.backlog {
			sum += b
			maxDelay = max(maxDelay, s.delay[i])
			parts = append(parts, i)
		}
		slices.Sort(parts)
		delay := time.Duration(maxDelay) * time.Second
		f := Finding{Severity: SeverityInfo, Check: CheckOffsetsReplicator, Cluster: cl.Name, Peer: p.Name, Subject: topic,
			Message:  fmt.Sprintf("%d offsets messages from %s are not yet replicated to %s (oldest %s)", sum, cl.Name, p.Name, delay),
			Evidence: map[string]any{"partitions": parts, "backlog": s.backlog, "delaySeconds": s.delay},
		}
		switch {
		case ttl > 0 && delay >= ttl:
			f.Severity = SeverityError
			f.Message += fmt.Sprintf(": older than the message TTL %s of %s, so they are being expired and never reach %s", ttl, cl.MetadataNamespacePath(), p.Name)
			f.Fix = pulsarAdmin(cl, "namespaces remove-message-ttl", cl.MetadataNamespacePath()) + "  # then fix the replication; or raise it: namespaces set-message-ttl --messageTTL <seconds>"
		case delay >= r.opts.ReplicationDelayWarn:
			f.Severity = SeverityWarning
			f.Message += ": the cached offsets on " + p.Name + " lag behind"
			stalled(cl, p, s, &f)
		}
		out = append(out, f)
	}
	return out
}

// stalled names a replicator that is connected, holds a backlog past the warning delay and
// sends nothing. Seen on Pulsar 2.10.1: the peer refused a replicated transactional message
// (KoP's Kafka transactions) because its transaction buffer was off, and the replicator sent
// nothing after it (docs/kop-facts.md).
func stalled(cl, p *Cluster, s *replicatorState, f *Finding) {
	if len(s.idle) == 0 {
		return
	}
	f.Message += fmt.Sprintf("; the replicator is connected but sends nothing on partitions %v: it is stalled (on Pulsar 2.10 a peer without its transaction buffer refuses a replicated transactional commit with \"Transaction buffer disable!\", logged by %s as \"Error producing on remote broker\")", s.idle, cl.Name)
	f.Evidence["stalledPartitions"] = s.idle
	topic := pulsarx.PartitionTopic(cl.OffsetsTopic(), s.idle[0])
	f.Fix = fmt.Sprintf("if %s's broker log says \"Transaction buffer disable!\", set transactionCoordinatorEnabled=true on the brokers of %s and restart them; then %s on %s for each stalled partition (the reloaded topic restarts its replicator from where it stopped)",
		cl.Name, p.Name, pulsarAdmin(cl, "topics unload", topic), cl.Name)
}

// effective policy values: the namespace's own, else the broker default from the runtime
// configuration, else Pulsar's default.
type nsEffective struct {
	retentionMinutes int64 // -1 infinite
	retentionSizeMB  int64 // -1 infinite
	compaction       int64 // bytes, 0 off
	ttlSeconds       int64 // 0 off
	source           map[string]string
}

func atoi(s string, def int64) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return def
	}
	return v
}

func effectivePolicies(ctx context.Context, cl *Cluster, p pulsarx.NamespacePolicy) nsEffective {
	rc := runtimeConfig(ctx, cl)
	e := nsEffective{source: map[string]string{}}
	broker := func(key string, pulsarDefault int64) int64 {
		if rc != nil {
			if v, ok := rc[key]; ok {
				return atoi(v, pulsarDefault)
			}
		}
		return pulsarDefault
	}
	set := func(dst *int64, name string, ns *int64, key string, def int64) {
		if ns != nil {
			*dst, e.source[name] = *ns, "namespace"
			return
		}
		*dst = broker(key, def)
		e.source[name] = "broker default " + key
	}
	i64 := func(p *int) *int64 {
		if p == nil {
			return nil
		}
		v := int64(*p)
		return &v
	}
	set(&e.retentionMinutes, "retentionTime", i64(p.RetentionTimeInMinutes), "defaultRetentionTimeInMinutes", 0)
	set(&e.retentionSizeMB, "retentionSize", p.RetentionSizeInMB, "defaultRetentionSizeInMB", 0)
	set(&e.compaction, "compactionThreshold", p.CompactionThreshold, "brokerServiceCompactionThresholdInBytes", 0)
	set(&e.ttlSeconds, "messageTTL", i64(p.MessageTTLInSeconds), "ttlDurationDefaultInSeconds", 0)
	return e
}

func effectiveTTL(ctx context.Context, cl *Cluster) time.Duration {
	p, err := cl.Admin.NamespacePolicies(ctx, cl.MetadataNamespacePath())
	if err != nil {
		return 0
	}
	return time.Duration(effectivePolicies(ctx, cl, p).ttlSeconds) * time.Second
}

func minutes(d time.Duration) int64 { return int64(d / time.Minute) }

// checkMetadataRetention: compaction, retention and message TTL of the metadata namespace
// against KoP's offsets retention, so that persisted commits are neither deleted nor
// expired before KoP (or the replicator) reads them.
func checkMetadataRetention(ctx context.Context, r *run) []Finding {
	var out []Finding
	for _, cl := range r.upClusters() {
		ns := cl.MetadataNamespacePath()
		p, err := cl.Admin.NamespacePolicies(ctx, ns)
		if err != nil {
			if !isNotFound(err) { // a missing namespace is reported by checkMetadataReplication
				out = append(out, r.failed(cl, CheckOffsetsRetention, ns, "get the policies of "+ns, err)...)
			}
			continue
		}
		e := effectivePolicies(ctx, cl, p)
		ev := map[string]any{
			"retentionTimeInMinutes": e.retentionMinutes, "retentionSizeInMB": e.retentionSizeMB,
			"compactionThresholdBytes": e.compaction, "messageTTLSeconds": e.ttlSeconds,
			"offsetsRetentionMinutes": minutes(r.opts.OffsetsRetention), "source": e.source,
		}
		retMin := minutes(r.opts.OffsetsRetention)
		timeOK := e.retentionMinutes == -1 || e.retentionMinutes >= retMin
		sizeOK := e.retentionSizeMB == -1
		if !timeOK || !sizeOK {
			t := "-1"
			if e.retentionMinutes != -1 {
				t = fmt.Sprintf("%dm", max(retMin, e.retentionMinutes))
			}
			out = append(out, Finding{Severity: SeverityError, Check: CheckOffsetsRetention, Cluster: cl.Name, Subject: ns,
				Message: fmt.Sprintf("%s on %s keeps acknowledged data only %s, less than KoP's offsets retention (%d minutes): once the replicators have read a ledger, it is deleted, and a group that has not committed since loses its offset at the next ownership change (compaction does not save it: it runs only once the backlog reaches its threshold). KoP sets retention to offsetsRetentionMinutes when it creates the namespace itself, not when the namespace was created before it",
					ns, cl.Name, retentionText(e), retMin),
				Evidence:     ev,
				Fix:          pulsarAdmin(cl, "namespaces set-retention", ns, "--time", t, "--size", "-1"),
				FixPulsarctl: pulsarctl(cl, "namespaces set-retention", ns, "--time", t, "--size", "-1"),
			})
		}
		if e.compaction <= 0 {
			out = append(out, Finding{Severity: SeverityWarning, Check: CheckOffsetsCompaction, Cluster: cl.Name, Subject: ns,
				Message:      fmt.Sprintf("%s on %s is not compacted automatically: the offsets topic keeps every commit for the retention period, and KoP reads all of them each time it loads a partition (KoP sets a 100MB threshold when it creates the namespace itself)", ns, cl.Name),
				Evidence:     ev,
				Fix:          pulsarAdmin(cl, "namespaces set-compaction-threshold", ns, "--threshold", "100M"),
				FixPulsarctl: pulsarctl(cl, "namespaces set-compaction-threshold", ns, "--size", "100M"),
			})
		}
		if len(p.ReplicationClusters) > 1 {
			// KoP expires an offset in its cache when its expireTimestamp passes (commit time
			// + offsetsRetentionMinutes, Stable groups too) and writes a tombstone for it.
			// The tombstone replicates: a standby whose stale cache expires an old commit
			// deletes the primary's newer offset at the primary's next load.
			out = append(out, Finding{Severity: SeverityInfo, Check: CheckOffsetsExpiry, Cluster: cl.Name, Subject: ns,
				Message: fmt.Sprintf("%s on %s replicates to %s: KoP's offset-expiry tombstones replicate too. A standby whose cache is stale expires the old commit after %s and its tombstone deletes the newer offset of that partition on the other clusters at their next load. Keep standby caches fresh (repair or watch --repair), commit at least once per retention period, and watch for expiring rows in check",
					ns, cl.Name, strings.Join(p.ReplicationClusters, ", "), r.opts.OffsetsRetention),
				Evidence: map[string]any{"replicationClusters": p.ReplicationClusters, "offsetsRetentionMinutes": minutes(r.opts.OffsetsRetention)},
				Fix:      "kop-offsets check --fail-on expired,expiring,stale_cache (cron), and kop-offsets repair --cluster " + cl.Name + " --yes for stale caches",
			})
		}
		if e.ttlSeconds > 0 {
			ttl := time.Duration(e.ttlSeconds) * time.Second
			f := Finding{Severity: SeverityInfo, Check: CheckOffsetsTTL, Cluster: cl.Name, Subject: ns,
				Message:  fmt.Sprintf("%s on %s has a message TTL of %s: commits a replicator has not sent within that time (a peer down longer) are expired and never replicated", ns, cl.Name, ttl),
				Evidence: ev,
			}
			if ttl < r.opts.OffsetsRetention {
				f.Severity = SeverityWarning
				f.Message += fmt.Sprintf("; it is shorter than KoP's offsets retention %s", r.opts.OffsetsRetention)
				f.Fix = pulsarAdmin(cl, "namespaces set-message-ttl", ns, "--messageTTL", fmt.Sprint(int64(r.opts.OffsetsRetention/time.Second)))
				f.FixPulsarctl = pulsarctl(cl, "namespaces set-message-ttl", ns, "--messageTTL", fmt.Sprint(int64(r.opts.OffsetsRetention/time.Second)))
			}
			out = append(out, f)
		}
	}
	return out
}

func retentionText(e nsEffective) string {
	t := "forever"
	if e.retentionMinutes >= 0 {
		t = fmt.Sprintf("%d minutes", e.retentionMinutes)
	}
	if e.retentionSizeMB >= 0 {
		t += fmt.Sprintf(" and at most %d MB", e.retentionSizeMB)
	}
	return t
}

// syncModel splits peers by the offsets topic's own (topic-level) replication policy on cl:
// the peers it still replicates to keep their replicator checks; those it leaves out are the
// sync deployment (`kop-offsets sync setup`: offsets reach them through watch --sync, not
// replication), reported once as an info with what it needs.
func syncModel(ctx context.Context, admin Admin, cl *Cluster, peers []*Cluster) ([]*Cluster, []Finding) {
	tr, ok := admin.(TopicReplication) // the unmemoized admin: the optional method is not memoized
	if !ok || len(peers) == 0 {
		return peers, nil
	}
	own, topicLevel, err := tr.TopicReplicationClusters(ctx, cl.OffsetsTopic())
	if err != nil || !topicLevel {
		return peers, nil // the namespace's policy applies: the replication model
	}
	var kept []*Cluster
	var left []string
	for _, p := range peers {
		if slices.Contains(own, p.PulsarName) {
			kept = append(kept, p)
		} else {
			left = append(left, p.Name)
		}
	}
	if len(left) == 0 {
		return kept, nil
	}
	return kept, []Finding{{Severity: SeverityInfo, Check: CheckDeploymentModel, Cluster: cl.Name, Subject: cl.OffsetsTopic(),
		Message: fmt.Sprintf("sync deployment: the offsets topic does not replicate to %s (its topic-level replication clusters: %s); offsets reach them only while `kop-offsets watch --sync` runs (docs/sync.md)",
			strings.Join(left, ", "), strings.Join(own, ", ")),
		Evidence: map[string]any{"topicReplicationClusters": own, "notReplicatedTo": left},
		Fix:      "to go back to the replication model: kop-offsets sync setup --undo"}}
}
