package loadgen

import (
	"context"
	"fmt"
	"net/http"

	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/connect"
)

// CreateTopics creates the load's topics as partitioned topics through a cluster's admin
// API, so that KoP (and kafka-consumer-groups --describe) finds every committed topic. A
// topic that exists already (409: created earlier, or by the replicator from the other
// cluster) is fine when its partition count matches.
func CreateTopics(ctx context.Context, cluster string, a pulsaradmin.Client, s Spec) error {
	for _, short := range s.TopicNames() {
		full := s.FullTopic(short)
		tn, err := utils.GetTopicName(full)
		if err != nil {
			return err
		}
		err = a.Topics().CreateWithContext(ctx, *tn, s.TopicPartitions)
		if err == nil {
			continue
		}
		if !connect.IsRESTStatus(err, http.StatusConflict) {
			return fmt.Errorf("loadgen: cluster %s: create %s with %d partitions: %w", cluster, full, s.TopicPartitions, err)
		}
		md, err := a.Topics().GetMetadataWithContext(ctx, *tn)
		if err != nil {
			return fmt.Errorf("loadgen: cluster %s: partitions of %s: %w", cluster, full, err)
		}
		if md.Partitions != s.TopicPartitions {
			return fmt.Errorf("loadgen: cluster %s: %s has %d partitions, the load wants %d", cluster, full, md.Partitions, s.TopicPartitions)
		}
	}
	return nil
}
