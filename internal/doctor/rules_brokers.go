package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// BrokerReport is what the report says about one active broker of a cluster.
type BrokerReport struct {
	ID        string `json:"id"` // host:port of its web service, as Pulsar lists it
	Reachable bool   `json:"reachable"`
	Version   string `json:"version,omitempty"`
	// KoP is whether KoP is loaded on it (messagingProtocols); absent when its runtime
	// configuration could not be read.
	KoP *bool `json:"kop,omitempty"`
}

// brokerSettings are the runtime-configuration keys every broker of a cluster must agree on
// for offsets: the cluster's name (replication), the broker-entry-metadata interceptors
// (KoP's offsets are their index) and the defaults doctor's retention rules fall back on
// (a namespace without its own policy gets the owning broker's, which changes with the
// owner). KoP's own settings (offsetsTopicNumPartitions, offsetsRetentionMinutes, ...) are
// not in the runtime configuration, which lists Pulsar's own fields only.
var brokerSettings = []string{
	"clusterName",
	"brokerEntryMetadataInterceptors",
	"defaultRetentionTimeInMinutes",
	"defaultRetentionSizeInMB",
	"brokerServiceCompactionThresholdInBytes",
	"ttlDurationDefaultInSeconds",
}

// brokerRead is what one broker answered about itself.
type brokerRead struct {
	id      string
	addr    string // the web address it was asked at; empty: it could not be found
	version string
	vErr    error
	rc      map[string]string // nil: not readable
}

// BrokerAddresser is optionally implemented by a Brokers: the web address to read broker
// at. A broker id is the host and port of its plain web service, which does not answer
// https; over an https admin URL the broker's TLS address comes from Pulsar
// (pulsarx.Admin.BrokerAddress). Without it the id is read with the admin URL's scheme.
type BrokerAddresser interface {
	BrokerAddress(ctx context.Context, cluster, broker string) (string, error)
}

// readBroker asks broker id of cl, at its own web address, for its version and (when that
// answered) its runtime configuration.
func readBroker(ctx context.Context, ba Brokers, cl *Cluster, id string) brokerRead {
	b := brokerRead{id: id, addr: brokerURL(cl, id)}
	at := id
	if bad, ok := ba.(BrokerAddresser); ok {
		addr, err := bad.BrokerAddress(ctx, cl.PulsarName, id)
		if err != nil {
			b.addr, b.vErr = "", err
			return b
		}
		at, b.addr = addr, addr
	}
	b.version, b.vErr = ba.BrokerVersionOf(ctx, at)
	if b.vErr == nil {
		b.rc, _ = ba.RuntimeConfigOf(ctx, at) // super-user only: compared when readable
	}
	return b
}

// checkBrokers: every active broker of the cluster, each asked at its own web address for
// its version and runtime configuration: KoP is loaded on each, and they agree on the
// settings offsets depend on. The admin URL alone reaches one broker of many.
func checkBrokers(ctx context.Context, r *run, cl *Cluster) []Finding {
	ba, ok := r.orig[cl.Name].Admin.(Brokers)
	if !ok || !r.up(cl) {
		return nil
	}
	ids, err := ba.ActiveBrokers(ctx, cl.PulsarName)
	switch {
	case errors.Is(err, pulsarx.ErrAuth):
		return []Finding{{Severity: SeverityWarning, Check: CheckBrokers, Cluster: cl.Name,
			Message:  fmt.Sprintf("the active brokers of %s could not be listed (it needs super-user permission): each broker's KoP and settings were not checked", cl.Name),
			Evidence: map[string]any{"error": err.Error()}}}
	case err != nil:
		return r.failed(cl, CheckBrokers, "", "list the active brokers", err)
	case len(ids) == 0:
		return nil
	}
	reads := make([]brokerRead, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			reads[i] = readBroker(ctx, ba, cl, id)
		})
	}
	wg.Wait()

	var out []Finding
	reports := make([]BrokerReport, len(reads))
	noKoP, withKoP := 0, 0
	var kopMissing []Finding
	for i, b := range reads {
		reports[i] = BrokerReport{ID: b.id, Reachable: b.vErr == nil || !isUnreachable(b.vErr), Version: b.version}
		if b.vErr != nil {
			out = append(out, brokerUnread(cl, b))
			continue
		}
		if b.rc == nil {
			continue
		}
		mp := b.rc["messagingProtocols"]
		kop := strings.Contains(mp, "kafka")
		reports[i].KoP = &kop
		if kop {
			withKoP++
		} else {
			noKoP++
			kopMissing = append(kopMissing, Finding{Severity: SeverityError, Check: CheckBrokerKoP, Cluster: cl.Name, Subject: b.id,
				Message:  fmt.Sprintf("KoP is not loaded on broker %s of %s (messagingProtocols=%q): KoP does not list it, and a group whose offsets partition's bundle that broker owns gets no coordinator", b.id, cl.Name, mp),
				Evidence: map[string]any{"broker": b.id, "messagingProtocols": mp, "protocolHandlerDirectory": b.rc["protocolHandlerDirectory"]},
				Fix: fmt.Sprintf("on broker %s: put the KoP .nar in protocolHandlerDirectory, set messagingProtocols=kafka and its kafkaListeners in broker.conf as on the other brokers, restart it; verify: curl %s/admin/v2/brokers/configuration/runtime",
					b.id, b.addr),
			})
		}
	}
	// A broker without KoP beside brokers with it is this finding; a cluster where no broker
	// runs KoP is the cluster-level KoP findings' (the Kafka listeners do not answer).
	if withKoP > 0 {
		out = append(out, kopMissing...)
	}
	out = append(out, brokersDisagree(cl, reads)...)
	r.mu.Lock()
	r.reports[cl.Name].Brokers = reports
	r.brokers[cl.Name] = brokerCount{active: len(ids), withoutKoP: noKoP}
	r.mu.Unlock()
	return out
}

// brokerCount is what checkBrokers learnt for the Kafka listener check.
type brokerCount struct{ active, withoutKoP int }

// brokerURL is the web address of broker id, with the scheme of cl's admin URL.
func brokerURL(cl *Cluster, id string) string {
	scheme, _, ok := strings.Cut(cl.AdminURL, "://")
	if !ok {
		scheme = "http"
	}
	return scheme + "://" + id
}

// brokerUnread is the finding for a broker whose own address did not answer: a warning,
// because brokers often advertise addresses only their peers reach.
func brokerUnread(cl *Cluster, b brokerRead) Finding {
	what := "did not answer at its own address " + b.addr
	switch {
	case b.addr == "":
		what = "has no web address the admin API named on " + cl.AdminURL + "'s scheme"
		b.addr = brokerURL(cl, b.id)
	case !isUnreachable(b.vErr):
		what = "answered with an error at its own address " + b.addr
	}
	msg := fmt.Sprintf("broker %s of %s %s: its version, KoP and settings were not compared with the other brokers'", b.id, cl.Name, what)
	return Finding{Severity: SeverityWarning, Check: CheckBrokers, Cluster: cl.Name, Subject: b.id, Message: msg,
		Evidence: map[string]any{"broker": b.id, "error": b.vErr.Error()},
		Fix:      fmt.Sprintf("check that the broker runs (%s) and that %s is reachable from where kop-offsets runs (the id is the broker's advertised web address)", pulsarAdmin(cl, "brokers list", cl.PulsarName), b.addr),
	}
}

// brokersDisagree names, for each setting (and the Pulsar version), the brokers whose value
// differs from most brokers' (every broker with its value on a tie).
func brokersDisagree(cl *Cluster, reads []brokerRead) []Finding {
	var out []Finding
	values := func(get func(brokerRead) (string, bool)) map[string]string {
		m := map[string]string{}
		for _, b := range reads {
			if v, ok := get(b); ok {
				m[b.id] = v
			}
		}
		return m
	}
	differ := func(byBroker map[string]string) (odd []string, common string) {
		count := map[string]int{}
		for _, v := range byBroker {
			count[v]++
		}
		if len(count) < 2 {
			return nil, ""
		}
		vs := slices.SortedFunc(maps.Keys(count), func(a, b string) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b)) })
		if count[vs[0]] > count[vs[1]] {
			common = vs[0]
		}
		for _, id := range slices.Sorted(maps.Keys(byBroker)) {
			if byBroker[id] != common {
				odd = append(odd, fmt.Sprintf("%s=%q", id, byBroker[id]))
			}
		}
		return odd, common
	}
	say := func(odd []string, common string) string {
		if common == "" {
			return strings.Join(odd, ", ")
		}
		return fmt.Sprintf("%s; the other brokers %q", strings.Join(odd, ", "), common)
	}
	versions := values(func(b brokerRead) (string, bool) { return b.version, b.vErr == nil && b.version != "" })
	if odd, common := differ(versions); odd != nil {
		out = append(out, Finding{Severity: SeverityWarning, Check: CheckBrokerVersion, Cluster: cl.Name,
			Message:  fmt.Sprintf("the brokers of %s run different Pulsar versions: %s", cl.Name, say(odd, common)),
			Evidence: map[string]any{"versions": versions}})
	}
	for _, key := range brokerSettings {
		byBroker := values(func(b brokerRead) (string, bool) {
			v, ok := b.rc[key]
			return v, b.rc != nil && ok
		})
		odd, common := differ(byBroker)
		if odd == nil {
			continue
		}
		out = append(out, Finding{Severity: SeverityError, Check: CheckBrokerSettings, Cluster: cl.Name, Subject: key,
			Message:  fmt.Sprintf("the brokers of %s disagree on %s: %s; what offsets get then depends on which broker owns their bundle, and the load manager moves bundles", cl.Name, key, say(odd, common)),
			Evidence: map[string]any{"setting": key, "values": byBroker},
			Fix:      fmt.Sprintf("set %s to one value in the broker.conf of every broker of %s and restart them (or, for a dynamic setting: %s)", key, cl.Name, pulsarAdmin(cl, "brokers update-dynamic-config", "--config", key, "--value", "VALUE")),
		})
	}
	return out
}
