package connect

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// KafkaOpts returns the franz-go options for cl's KoP listeners: seed brokers, SASL
// (PLAIN, SCRAM-SHA-256/512; KoP's "token:<jwt>" password passes through PLAIN as is),
// TLS, timeouts and logging. Add consumer or admin options of your own.
func KafkaOpts(cl config.Cluster, o Options) ([]kgo.Opt, error) {
	o = o.Normalize()
	if len(cl.KafkaBootstrap) == 0 {
		return nil, notConfigured(cl, "kafkaBootstrap")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cl.KafkaBootstrap...),
		kgo.ClientID("kop-offsets"),
		// KoP implements Kafka 3.4's protocol (ApiVersions 0..3) and closes the connection,
		// instead of answering UNSUPPORTED_VERSION, when ApiVersions arrives at v4 or later,
		// which franz-go sends uncapped and from kversion 3.9 on. 3.8 still sends v3 and lets
		// every other request negotiate down; below 3.0, OffsetFetch v7 for all topics hits
		// a NullPointerException in KoP. Seen on a KoP built from the v3.1.1.1 source.
		kgo.MaxVersions(kversion.V3_8_0()),
		kgo.DialTimeout(o.DialTimeout),
		kgo.RequestTimeoutOverhead(o.RequestTimeout),
		kgo.RetryTimeout(o.RequestTimeout),
		kgo.WithLogger(kgoLogger{l: o.Logger.With("client", "kafka", "cluster", cl.Name)}),
	}
	if ka := cl.KafkaAuth; ka != nil {
		if cl.KafkaTLSEnabled() {
			tlsCfg, err := TLSConfig(cl, "kafkaAuth.tls", ka.TLS)
			if err != nil {
				return nil, err
			}
			opts = append(opts, kgo.DialTLSConfig(tlsCfg))
		}
		if s := ka.SASL; s != nil {
			pw, err := cl.ResolveSecret("kafkaAuth.sasl.password", s.Password)
			if err != nil {
				return nil, err
			}
			switch s.Mechanism {
			case config.MechanismPlain:
				opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: pw}.AsMechanism()))
			case config.MechanismScramSHA256:
				opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: pw}.AsSha256Mechanism()))
			case config.MechanismScramSHA512:
				opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: pw}.AsSha512Mechanism()))
			default:
				return nil, &config.Error{Cluster: cl.Name, Field: "kafkaAuth.sasl.mechanism", Msg: "unsupported mechanism " + s.Mechanism}
			}
		}
	}
	return opts, nil
}

// NewKafkaClient builds a *kgo.Client for cl with KafkaOpts plus extra. It connects on
// first use; the caller closes it.
func NewKafkaClient(cl config.Cluster, o Options, extra ...kgo.Opt) (*kgo.Client, error) {
	opts, err := KafkaOpts(cl, o)
	if err != nil {
		return nil, err
	}
	c, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, &config.Error{Cluster: cl.Name, Field: "kafkaBootstrap", Err: err}
	}
	return c, nil
}

// kgoLogger sends franz-go's logs to slog.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	ctx := context.Background()
	switch {
	case k.l.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelDebug
	case k.l.Enabled(ctx, slog.LevelInfo):
		return kgo.LogLevelInfo
	case k.l.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	case k.l.Enabled(ctx, slog.LevelError):
		return kgo.LogLevelError
	}
	return kgo.LogLevelNone
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var l slog.Level
	switch level {
	case kgo.LogLevelError:
		l = slog.LevelError
	case kgo.LogLevelWarn:
		l = slog.LevelWarn
	case kgo.LogLevelInfo:
		l = slog.LevelInfo
	default:
		l = slog.LevelDebug
	}
	k.l.Log(context.Background(), l, msg, keyvals...)
}
