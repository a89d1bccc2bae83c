// Package factory wires the default cmdutil.Factory (cli/cli's pkg/cmd/factory): real
// streams, the config loaded lazily from the global flags, and client constructors from
// internal/connect.
package factory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
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
	discover := discoverTenants(flags)
	scopes := func(all bool) func() ([]config.Scope, error) {
		return sync.OnceValues(func() ([]config.Scope, error) {
			cfg, err := f.Config()
			if err != nil {
				return nil, err
			}
			sel := cfg.Clusters
			if !all {
				if sel, err = cfg.Select(flags.Clusters); err != nil {
					return nil, err
				}
			}
			warn := ios.ErrOut
			if all {
				warn = io.Discard // Scopes, of the selected clusters, warns
			}
			return Scopes(warn, sel, flags.Tenants, discover)
		})
	}
	f.Scopes, f.AllScopes = scopes(false), scopes(true)
	f.Clusters = func() ([]config.Cluster, error) {
		cfg, err := f.Config()
		if err != nil {
			return nil, err
		}
		if !cfg.MultiTenant() && len(flags.Tenants) == 0 {
			return cfg.Select(flags.Clusters)
		}
		scopes, err := f.Scopes()
		if err != nil {
			return nil, err
		}
		return OneScope(scopes)
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

// Scopes groups the selected clusters by tenant (config.Scopes), selecting by --tenant. A
// cluster whose tenants cannot be listed is a warning on stderr; if that leaves nothing,
// the error is exit 3. No tenant matching --tenant is exit 2.
func Scopes(warn io.Writer, sel []config.Cluster, tenants []string, discover config.DiscoverFunc) ([]config.Scope, error) {
	scopes, errs := config.Scopes(sel, tenants, discover)
	for _, e := range errs {
		fmt.Fprintf(warn, "warning: %v; its tenants are left out\n", e)
	}
	if len(scopes) > 0 {
		return scopes, nil
	}
	if len(errs) > 0 {
		return nil, cmdutil.UnreachableError(fmt.Errorf("no tenant could be listed: %w", errors.Join(errs...)))
	}
	var known []string
	all, _ := config.Scopes(sel, nil, nil)
	for _, s := range all {
		known = append(known, s.Tenant)
	}
	return nil, cmdutil.UsageErrorf("--tenant %s matches no tenant of the selected clusters (tenants: %s)", strings.Join(tenants, ","), strings.Join(known, ", "))
}

// OneScope returns the clusters of the one scope a command that works on one tenant at a
// time is given; several are a usage error naming them.
func OneScope(scopes []config.Scope) ([]config.Cluster, error) {
	if len(scopes) == 1 {
		return scopes[0].Clusters, nil
	}
	return nil, cmdutil.UsageErrorf("this command works on one tenant at a time and the selected clusters have %d (%s): select one with --tenant", len(scopes), strings.Join(config.ScopeNames(scopes), ", "))
}

// discoverTenants lists a `tenants: auto` cluster's tenants through its admin API, once
// per cluster and run, and warns once when it cannot.
func discoverTenants(flags *cmdutil.GlobalFlags) config.DiscoverFunc {
	type answer struct {
		tenants []string
		err     error
	}
	var mu sync.Mutex
	seen := map[string]answer{}
	return func(cl config.Cluster) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if a, ok := seen[cl.Name]; ok {
			return a.tenants, a.err
		}
		ts, err := listTenants(cl, flags.Timeout)
		seen[cl.Name] = answer{ts, err}
		return ts, err
	}
}

func listTenants(cl config.Cluster, timeout time.Duration) ([]string, error) {
	rt, err := connect.AdminTransport(cl, connect.Options{RequestTimeout: timeout})
	if err != nil {
		return nil, err
	}
	a, err := pulsarx.NewAdminWithTransport(cl.Name, cl.AdminURL, rt)
	if err != nil {
		return nil, err
	}
	a.SetTimeout(timeout)
	return a.OffsetsTenants(context.Background(), cl.MetadataNamespace)
}

// LoadConfig returns the config the global flags point at: the ad-hoc cluster (named after
// what the user typed) when --admin-url, --service-url or --bootstrap is given (no file is read then), else the
// file from --config, $KOP_OFFSETS_CONFIG or the default path.
func LoadConfig(flags *cmdutil.GlobalFlags, getenv func(string) string) (*config.Config, error) {
	if flags.AdHoc() {
		if flags.ConfigPath != "" {
			return nil, cmdutil.UsageErrorf("--config cannot be combined with --admin-url, --service-url or --bootstrap (they define an ad-hoc cluster instead of the file's)")
		}
		return config.AdHoc(flags.AdminURL, flags.ServiceURL, flags.Bootstrap)
	}
	return config.Load(config.Locate(flags.ConfigPath, getenv))
}
