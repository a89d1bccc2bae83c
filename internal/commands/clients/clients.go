package clients

import (
	"errors"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/align"
	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// PulsarSide is one cluster's Pulsar clients, wired once for every command: the admin API,
// a client (the caller closes it), the Pulsar-name-to-config-name map and a reader of the
// offsets topic as KoP's loader reads it.
type PulsarSide struct {
	Admin  *pulsarx.Admin
	Client pulsar.Client
	Names  map[string]string // nil when the names were not checked
	Reader *pulsarx.Reader
	// Down is set when the admin API did not answer the name check within the timeout.
	Down *NoAnswer
}

// DialPulsar builds cl's Pulsar side from f. With checkNames the cluster's Pulsar name is
// checked against the config first (ReplicationNames) and the reader names replicated
// commits by config names. Nothing is left open on an error.
func DialPulsar(f *cmdutil.Factory, cl config.Cluster, checkNames bool) (*PulsarSide, error) {
	adm, err := NewAdmin(cl, f.Flags.Timeout)
	if err != nil {
		return nil, err
	}
	var names map[string]string
	var down *NoAnswer
	if checkNames {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		if names, err = ReplicationNames(adm, cl, cfg, f.Flags.Timeout); err != nil {
			if !errors.As(err, &down) {
				return nil, err
			}
			names = config.PulsarNames(cfg.Clusters)
		}
	}
	pc, err := f.PulsarClient(cl)
	if err != nil {
		return nil, err
	}
	return &PulsarSide{Admin: adm, Client: pc, Names: names, Reader: LoaderReader(cl, pc, adm, names), Down: down}, nil
}

// DataCopies reads cl's copies of the data topics through its KoP listener (align): one
// client kept for log bounds, one consumer per read.
func DataCopies(f *cmdutil.Factory, cl config.Cluster) align.Source {
	return &align.KafkaSource{NewClient: func(opts ...kgo.Opt) (*kgo.Client, error) { return f.KafkaClient(cl, opts...) }}
}
