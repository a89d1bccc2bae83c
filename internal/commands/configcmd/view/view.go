// Package view implements `kop-offsets config view`.
package view

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Spec is the output format of `config view`: yaml by default, also json and a table summary.
var Spec = output.Spec{Allowed: output.Standard, DefaultTTY: output.YAML, DefaultPiped: output.YAML}

// Options of `config view`.
type Options struct {
	IO       *iostreams.IOStreams
	Format   output.Format
	Clusters func() ([]config.Cluster, error)
}

// NewCmdView returns `config view`. runF replaces the run function in tests.
func NewCmdView(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters}
	cmd := &cobra.Command{
		Use:   "view",
		Short: "Print the effective configuration, secrets redacted",
		Long: strings.TrimSpace(`
Print the configuration kop-offsets uses, for the clusters --cluster selects (default:
all): the file's content after defaults (tenant public, metadataNamespace __kafka,
kafkaNamespace public/default), in the file's own format, so the output can be saved as
a config file.

Literal secrets (pulsarAuth.token, kafkaAuth.sasl.password) print as <redacted>;
references (env:NAME, file:PATH) print as written: they say where a secret is, not what
it is. Nothing is resolved and no cluster is contacted.

Output: yaml (default), json, or -o table for a one-line-per-cluster summary.`),
		Example: cmdutil.Examples(`
  kop-offsets config view
  kop-offsets config view --cluster wus -o json
  kop-offsets --config ./lab.yaml config view -o table`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(Spec); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return viewRun(opts)
		},
	}
	return cmd
}

func viewRun(opts *Options) error {
	clusters, err := opts.Clusters()
	if err != nil {
		return err
	}
	doc := (&config.Config{Clusters: clusters}).Redacted()
	return output.Print(opts.IO, opts.Format, doc, func(tp *output.TablePrinter) {
		tp.AddHeader("NAME", "ADMIN URL", "SERVICE URL", "KAFKA BOOTSTRAP", "OFFSETS TOPIC", "PULSAR AUTH", "KAFKA AUTH")
		for _, c := range doc.Clusters {
			tp.AddRow(c.Name, output.Dash(c.AdminURL), output.Dash(c.ServiceURL), output.Dash(strings.Join(c.KafkaBootstrap, ",")),
				c.OffsetsTopic(), pulsarAuth(c), kafkaAuth(c))
		}
	})
}

func pulsarAuth(c config.Cluster) string {
	var parts []string
	if a := c.PulsarAuth; a != nil {
		switch {
		case a.Token != "":
			parts = append(parts, "token")
		case a.TokenFile != "":
			parts = append(parts, "token-file")
		case a.OAuth2 != nil:
			parts = append(parts, "oauth2")
		}
		if a.TLS != nil && a.TLS.CertFile != "" {
			parts = append(parts, "tls-cert")
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

func kafkaAuth(c config.Cluster) string {
	var parts []string
	if a := c.KafkaAuth; a != nil {
		if a.SASL != nil {
			parts = append(parts, a.SASL.Mechanism)
		}
		if a.TLS != nil {
			parts = append(parts, "tls")
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}
