package lab

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// CheckHealth returns nil when cluster c is ready: the broker health check passes, the tenant
// public exists and, when KoP is on, public/__kafka exists and the Kafka listener answers a
// Metadata request.
func CheckHealth(ctx context.Context, c Cluster) error {
	admin, err := NewAdmin(c)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := admin.Brokers().HealthCheckWithTopicVersionWithContext(cctx, utils.TopicVersionV1); err != nil {
		return fmt.Errorf("%s: GET /admin/v2/brokers/health: %w", c.Name, err)
	}
	if _, err := admin.Tenants().GetWithContext(cctx, Tenant); err != nil {
		return fmt.Errorf("%s: tenant %s: %w", c.Name, Tenant, err)
	}
	if !c.KoP {
		return nil
	}
	nss, err := admin.Namespaces().GetNamespacesWithContext(cctx, Tenant)
	if err != nil {
		return fmt.Errorf("%s: namespaces of %s: %w", c.Name, Tenant, err)
	}
	if !slices.Contains(nss, MetadataNamespace) {
		return fmt.Errorf("%s: KoP has not created %s yet", c.Name, MetadataNamespace)
	}
	return KafkaMetadata(cctx, c)
}

// KafkaMetadata sends one Kafka Metadata request to c's KoP listener.
func KafkaMetadata(ctx context.Context, c Cluster) error {
	// Capped like internal/connect: KoP closes the connection on ApiVersions v4 and later.
	opts, err := kafkaAuthOpts(c)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.KafkaBootstrap), kgo.DialTimeout(3*time.Second), kgo.MaxVersions(kversion.V3_8_0()),
		kgo.RequestRetries(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("%s: Kafka Metadata on %s: %w", c.Name, c.KafkaBootstrap, err)
	}
	if len(resp.Brokers) == 0 {
		return fmt.Errorf("%s: Kafka Metadata on %s: no brokers in the answer", c.Name, c.KafkaBootstrap)
	}
	return nil
}

// waitHealthy polls CheckHealth on c (a standalone, or the view of one broker) until it
// passes, the JVM pid exits, or timeout elapses. Failures carry the last 40 lines of the
// process's log.
func waitHealthy(ctx context.Context, logPath string, c Cluster, pid int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	what := c.Name
	if !c.Standalone() {
		what = fmt.Sprintf("%s broker on %s", c.Name, c.AdminURL)
	}
	var last error
	for {
		if !IsLabJVM(pid, c.Name) {
			return time.Since(start), fmt.Errorf("lab: %s (pid %d) exited during start-up; last 40 lines of %s:\n%s",
				what, pid, logPath, LogTail(logPath, 40))
		}
		if last = CheckHealth(ctx, c); last == nil {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("lab: %s (pid %d) not healthy after %s: %w\nlast 40 lines of %s:\n%s",
				what, pid, timeout, last, logPath, LogTail(logPath, 40))
		case <-time.After(time.Second):
		}
	}
}

// portInUse reports whether something accepts connections on 127.0.0.1:port.
func portInUse(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(Host, strconv.Itoa(port)), 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}
