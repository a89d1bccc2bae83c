package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/loader"
)

// KafkaProbe is what a KoP listener answered.
type KafkaProbe struct {
	Brokers   int    // brokers in the Metadata answer
	ClusterID string // cluster id in the Metadata answer
	// MaxVersions are the highest versions of the requests offsets tools use (OffsetFetch,
	// OffsetCommit, FindCoordinator, Metadata) from the ApiVersions answer.
	MaxVersions map[string]int16
	// Listeners are the KoP brokers the Metadata answer advertises, each asked for
	// ApiVersions at its advertised address; nil when the prober does not ask each one.
	Listeners []KafkaListener
	// Refused holds the bootstrap addresses that refused a connection while another one
	// answered (address -> dial error).
	Refused map[string]string
}

// KafkaListener is one KoP broker of the Metadata answer.
type KafkaListener struct {
	NodeID  int32  `json:"node"`
	Address string `json:"address"` // advertised host:port
	// Error is its ApiVersions failure; empty when it answered.
	Error       string           `json:"error,omitempty"`
	MaxVersions map[string]int16 `json:"maxVersions,omitempty"`
}

// KafkaProber asks a cluster's KoP listener for ApiVersions and Metadata. It must return
// when ctx is done.
type KafkaProber interface {
	Probe(ctx context.Context, cl Cluster) (KafkaProbe, error)
}

// PartitionProber is optionally implemented by a KafkaProber: it asks KoP about a probe
// group of each of the n offsets partitions (loader.ProbeGroup) and returns, for those KoP
// does not serve (NOT_COORDINATOR or loading until ctx ends), what it answered.
type PartitionProber interface {
	ProbePartitions(ctx context.Context, cl Cluster, n int32) (map[int32]string, error)
}

// KafkaProbeError says where a probe failed; Dial holds the TCP dial error of each
// bootstrap address that refused (evidence for "nothing listens there").
type KafkaProbeError struct {
	Stage string            // "dial", "ApiVersions" or "Metadata"
	Dial  map[string]string // bootstrap address -> dial error, for those that failed
	Err   error
}

func (e *KafkaProbeError) Error() string { return e.Stage + ": " + e.Err.Error() }
func (e *KafkaProbeError) Unwrap() error { return e.Err }

// KgoProber probes with franz-go: a TCP dial of each bootstrap address first (so a closed
// port is reported as such, not as a timeout), then kadm's ApiVersions and BrokerMetadata.
type KgoProber struct {
	// NewClient builds a client for the cluster's KoP listeners (the Factory's
	// KafkaClient); the prober closes it.
	NewClient func(cl Cluster, extra ...kgo.Opt) (*kgo.Client, error)
	// DialTimeout bounds each TCP dial (default 3s).
	DialTimeout time.Duration
}

// Probe implements KafkaProber.
func (p *KgoProber) Probe(ctx context.Context, cl Cluster) (KafkaProbe, error) {
	dt := p.DialTimeout
	if dt <= 0 {
		dt = 3 * time.Second
	}
	dialErrs := map[string]string{}
	var d net.Dialer
	for _, addr := range cl.KafkaBootstrap {
		dctx, cancel := context.WithTimeout(ctx, dt)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err != nil {
			dialErrs[addr] = err.Error()
			continue
		}
		_ = c.Close()
	}
	if len(dialErrs) == len(cl.KafkaBootstrap) {
		msgs := make([]string, 0, len(dialErrs))
		for _, a := range cl.KafkaBootstrap {
			msgs = append(msgs, dialErrs[a])
		}
		return KafkaProbe{}, &KafkaProbeError{Stage: "dial", Dial: dialErrs, Err: errors.New(strings.Join(msgs, "; "))}
	}
	c, err := p.NewClient(cl, kgo.RequestRetries(0), kgo.DialTimeout(dt))
	if err != nil {
		return KafkaProbe{}, &KafkaProbeError{Stage: "client", Dial: dialErrs, Err: err}
	}
	defer c.Close()
	adm := kadm.NewClient(c)
	out := KafkaProbe{MaxVersions: map[string]int16{}}
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return out, &KafkaProbeError{Stage: "ApiVersions", Dial: dialErrs, Err: err}
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return out, &KafkaProbeError{Stage: "Metadata", Dial: dialErrs, Err: err}
	}
	out.Brokers, out.ClusterID = len(md.Brokers), md.Cluster
	if out.Brokers == 0 {
		return out, &KafkaProbeError{Stage: "Metadata", Dial: dialErrs, Err: fmt.Errorf("no brokers in the answer")}
	}
	// Every advertised KoP broker, not only the first that answers: a client is sent to
	// each of them (as a group's coordinator, as a partition's leader).
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, fmt.Sprint(b.Port))
	}
	var lastErr error
	for _, bv := range vs.Sorted() {
		l := KafkaListener{NodeID: bv.NodeID, Address: addrs[bv.NodeID]}
		if bv.Err != nil {
			lastErr, l.Error = bv.Err, bv.Err.Error()
		} else {
			l.MaxVersions = maxVersions(bv)
			if len(out.MaxVersions) == 0 {
				out.MaxVersions = l.MaxVersions
			}
		}
		out.Listeners = append(out.Listeners, l)
	}
	if len(out.MaxVersions) == 0 {
		if lastErr == nil {
			lastErr = errors.New("no broker answered")
		}
		return out, &KafkaProbeError{Stage: "ApiVersions", Dial: dialErrs, Err: lastErr}
	}
	if len(dialErrs) > 0 {
		out.Refused = dialErrs
	}
	return out, nil
}

// maxVersions picks the highest versions of the requests offsets tools use.
func maxVersions(bv kadm.BrokerApiVersions) map[string]int16 {
	out := map[string]int16{}
	for _, name := range []string{"OffsetFetch", "OffsetCommit", "FindCoordinator", "Metadata"} {
		if _, maxVersion, ok := bv.KeyVersions(keyByName[name]); ok {
			out[name] = maxVersion
		}
	}
	return out
}

var keyByName = map[string]int16{"OffsetCommit": 8, "OffsetFetch": 9, "FindCoordinator": 10, "Metadata": 3}

// ProbePartitions implements PartitionProber with one OffsetFetch per probe group; kgo
// retries NOT_COORDINATOR and loading until ctx ends, and what is still answered then is
// reported.
func (p *KgoProber) ProbePartitions(ctx context.Context, cl Cluster, n int32) (map[int32]string, error) {
	// kgo retries NOT_COORDINATOR and loading until its retry timeout: keep that inside ctx
	// so that KoP's last answer, not the deadline, is what is reported.
	retry := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		retry = max(time.Until(dl)/2, 500*time.Millisecond)
	}
	kc, err := p.NewClient(cl, kgo.RetryTimeout(retry))
	if err != nil {
		return nil, err
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	out := map[int32]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for part := range n {
		wg.Go(func() {
			resp, err := adm.FetchOffsets(ctx, loader.ProbeGroup(part, n))
			if err == nil {
				err = resp.Error()
			}
			if errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) {
				mu.Lock()
				out[part] = err.Error()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out, nil
}
