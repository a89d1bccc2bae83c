// Package factory wires the default cmdutil.Factory (cli/cli's pkg/cmd/factory): real
// streams, the config loaded lazily from the global flags, and client constructors from
// internal/connect.
package factory

import (
	"log/slog"
	"os"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// New returns the Factory of the process. Getenv defaults to os.Getenv.
func New(appVersion string, ios *iostreams.IOStreams) *cmdutil.Factory {
	return NewWithEnv(appVersion, ios, os.Getenv)
}

// NewWithEnv is New with an explicit environment lookup (tests).
func NewWithEnv(appVersion string, ios *iostreams.IOStreams, getenv func(string) string) *cmdutil.Factory {
	flags := &cmdutil.GlobalFlags{Timeout: connect.DefaultRequestTimeout}
	f := &cmdutil.Factory{AppVersion: appVersion, IOStreams: ios, Flags: flags}

	f.Logger = sync.OnceValue(func() *slog.Logger {
		level := slog.LevelWarn
		if flags.Verbose {
			level = slog.LevelDebug
		}
		return slog.New(slog.NewTextHandler(ios.ErrOut, &slog.HandlerOptions{Level: level}))
	})
	f.Config = sync.OnceValues(func() (*config.Config, error) { return LoadConfig(flags, getenv) })
	f.Clusters = func() ([]config.Cluster, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		return cfg.Select(flags.Clusters)
	}
	f.ConnectOptions = func() connect.Options {
		o := connect.Options{RequestTimeout: flags.Timeout}
		if flags.Verbose {
			// The client libraries log connection attempts and retries: only with --verbose;
			// otherwise the commands report failures themselves.
			o.Logger = f.Logger()
		}
		return o.Normalize()
	}
	f.PulsarClient = func(cl config.Cluster) (pulsar.Client, error) {
		return connect.NewPulsarClient(cl, f.ConnectOptions())
	}
	f.AdminClient = func(cl config.Cluster) (pulsaradmin.Client, error) {
		return connect.NewAdminClient(cl, f.ConnectOptions())
	}
	f.KafkaClient = func(cl config.Cluster, extra ...kgo.Opt) (*kgo.Client, error) {
		return connect.NewKafkaClient(cl, f.ConnectOptions(), extra...)
	}
	return f
}

// LoadConfig returns the config the global flags point at: the ad-hoc cluster "default"
// when --admin-url, --service-url or --bootstrap is given (no file is read then), else the
// file from --config, $KOP_OFFSETS_CONFIG or the default path.
func LoadConfig(flags *cmdutil.GlobalFlags, getenv func(string) string) (*config.Config, error) {
	if flags.AdHoc() {
		if flags.ConfigPath != "" {
			return nil, cmdutil.UsageErrorf("--config cannot be combined with --admin-url, --service-url or --bootstrap (they define the ad-hoc cluster %q)", config.AdHocClusterName)
		}
		return config.AdHoc(flags.AdminURL, flags.ServiceURL, flags.Bootstrap)
	}
	return config.Load(config.Locate(flags.ConfigPath, getenv))
}
