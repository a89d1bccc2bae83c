package cmdutil

import (
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

// GlobalFlags are the values of the root command's persistent flags. The root command binds
// them; the Factory's lazy functions read them when called (after flag parsing).
type GlobalFlags struct {
	ConfigPath string        // --config
	Clusters   []string      // --cluster (repeatable, comma-separated)
	AdminURL   string        // --admin-url (the ad-hoc cluster, named after its host:port)
	ServiceURL string        // --service-url
	Bootstrap  []string      // --bootstrap
	Output     string        // -o/--output, empty when not given (see OutputFormat)
	Timeout    time.Duration // --timeout: per request/operation
	Verbose    bool          // --verbose: debug logs on stderr
	NoHeaders  bool          // --no-headers: tables without their header line
	Tenants    []string      // --tenant: names or globs (internal/match)
}

// AdHoc reports whether the ad-hoc cluster flags are in use.
func (g *GlobalFlags) AdHoc() bool {
	return g.AdminURL != "" || g.ServiceURL != "" || len(g.Bootstrap) > 0
}

// Factory carries what commands need, as plain values and lazy constructors, wired once
// in internal/commands/factory. Nothing in it contacts a cluster until a command calls one
// of the client constructors.
type Factory struct {
	AppVersion string
	IOStreams  *iostreams.IOStreams
	Flags      *GlobalFlags

	// Logger returns the logger for stderr (debug with --verbose, warnings otherwise).
	Logger func() *slog.Logger
	// Config loads the config once: from the ad-hoc flags, or --config,
	// $KOP_OFFSETS_CONFIG, $XDG_CONFIG_HOME/kop-offsets/config.yaml. Errors map to exit 2.
	Config func() (*config.Config, error)
	// Clusters returns the clusters --cluster selects (all when not given). An unknown name
	// is a *config.Error (exit 2). In a multi-tenant config (`tenants:`) or with --tenant,
	// they are the views of the one tenant selected; more than one is a usage error that
	// names them (commands that work per tenant call Scopes).
	Clusters func() ([]config.Cluster, error)
	// Scopes returns the selected clusters per tenant --tenant selects: one scope per tenant,
	// the unit commands compare in. A `tenants: auto` cluster whose tenants cannot be listed
	// is warned about on stderr and left out; none left at all is exit 3.
	Scopes func() ([]config.Scope, error)
	// AllScopes is Scopes over every configured cluster (--cluster ignored): what a
	// writing command compares its targets with.
	AllScopes func() ([]config.Scope, error)
	// ConnectOptions returns the timeouts (--timeout) and logger for the clients.
	ConnectOptions func() connect.Options

	// PulsarClient builds a new pulsar.Client for a cluster (the caller closes it).
	PulsarClient func(config.Cluster) (pulsar.Client, error)
	// AdminClient builds a new pulsaradmin.Client for a cluster.
	AdminClient func(config.Cluster) (pulsaradmin.Client, error)
	// KafkaClient builds a new *kgo.Client for a cluster's KoP listeners with extra
	// options (the caller closes it).
	KafkaClient func(cl config.Cluster, extra ...kgo.Opt) (*kgo.Client, error)
}

// BindGlobalFlags defines the global persistent flags on cmd (the root; tests use it on a
// stand-in root) and binds them to fl.
func BindGlobalFlags(cmd *cobra.Command, fl *GlobalFlags) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&fl.ConfigPath, "config", "", "config file (default $KOP_OFFSETS_CONFIG, else $XDG_CONFIG_HOME/kop-offsets/config.yaml)")
	pf.StringSliceVar(&fl.Clusters, "cluster", nil, "clusters to work on, repeatable or comma-separated (default: all in the config)")
	MarkCluster(pf, "cluster")
	pf.StringVar(&fl.AdminURL, "admin-url", "", "ad-hoc cluster: Pulsar admin URL (http[s]://host:port); no config file is read")
	pf.StringVar(&fl.ServiceURL, "service-url", "", "ad-hoc cluster: Pulsar service URL (pulsar[+ssl]://host:port)")
	pf.StringSliceVar(&fl.Bootstrap, "bootstrap", nil, "ad-hoc cluster: KoP bootstrap servers host:port, repeatable or comma-separated")
	pf.StringVarP(&fl.Output, "output", "o", "", "output format: table, json or yaml (decode, dump: also ndjson) (default table on a terminal)")
	if fl.Timeout == 0 {
		fl.Timeout = connect.DefaultRequestTimeout
	}
	pf.DurationVar(&fl.Timeout, "timeout", fl.Timeout, "timeout of each request to a cluster (dial timeout: the smaller of 5s and this)")
	pf.BoolVar(&fl.Verbose, "verbose", false, "log what is done to stderr")
	PatternsVar(pf, &fl.Tenants, "tenant", "tenants to work on (multi-tenant KoP: tenants: in the config), name or glob, repeatable (default: all)")
	pf.BoolVar(&fl.NoHeaders, "no-headers", false, "-o table: no header line, on a terminal or piped (piped tables are tab-separated)")
}
