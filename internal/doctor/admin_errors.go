package doctor

import (
	"context"
	"errors"
	"net/http"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// classify turns a pulsaradmin error into a *pulsarx.AdminError, as pulsarx does for its own
// calls: an HTTP answer keeps its status, anything else (refused, timeout) is status 0,
// "unreachable".
func classify(cluster, op, target string, err error) error {
	if err == nil {
		return nil
	}
	var ae *pulsarx.AdminError
	if errors.As(err, &ae) {
		return err
	}
	e := &pulsarx.AdminError{Cluster: cluster, Op: op, Target: target, Err: err}
	var re rest.Error
	if errors.As(err, &re) {
		e.Status = re.Code
	} else if errors.Is(err, context.Canceled) {
		return err
	}
	return e
}

func parseTopic(topic string) (*utils.TopicName, error) {
	tn, err := utils.GetTopicName(topic)
	if err != nil {
		return nil, &pulsarx.AdminError{Op: "parse topic name", Target: topic, Status: http.StatusBadRequest, Err: err}
	}
	return tn, nil
}
