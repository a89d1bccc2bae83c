// Package check implements `kop-offsets config check`.
package check

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/explain"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/outcome"
	"github.com/kop-offsets/kop-offsets/internal/output"
)

// Endpoint kinds.
const (
	EndpointAdmin  = string(explain.Admin)
	EndpointPulsar = string(explain.Pulsar)
	EndpointKafka  = string(explain.Kafka)
)

// Endpoint statuses.
const (
	StatusOK            = "ok"
	StatusFailed        = "failed"
	StatusNotConfigured = "not_configured"
)

// Prober tries one kind of endpoint of a cluster and returns a short description of what
// it saw. It must return when ctx is done.
type Prober interface {
	Admin(ctx context.Context, cl config.Cluster) (string, error)
	Pulsar(ctx context.Context, cl config.Cluster) (string, error)
	Kafka(ctx context.Context, cl config.Cluster) (string, error)
}

// Options of `config check`.
type Options struct {
	IO         *iostreams.IOStreams
	Format     output.Format
	Clusters   func() ([]config.Cluster, error)
	ConfigPath func() string
	Prober     Prober
	Timeout    time.Duration // per endpoint
}

// EndpointResult is one row of the result.
type EndpointResult struct {
	Cluster   string   `json:"cluster"`
	Endpoint  string   `json:"endpoint"`
	URL       string   `json:"url,omitempty"`
	Status    string   `json:"status"`
	LatencyMs *float64 `json:"latencyMs,omitempty"`
	Detail    string   `json:"detail,omitempty"` // what answered; on failure the underlying error's text
	Error     string   `json:"error,omitempty"`  // the cause, what failed and the fix, on one line
	Cause     string   `json:"cause,omitempty"`
	Fix       string   `json:"fix,omitempty"`
}

// Result is the document `config check -o json` prints.
type Result struct {
	SchemaVersion int              `json:"schemaVersion"`
	Config        string           `json:"config,omitempty"`
	Clusters      []string         `json:"clusters"`
	Endpoints     []EndpointResult `json:"endpoints"`
	Summary       map[string]int   `json:"summary"`
	ExitCode      outcome.Outcome  `json:"exitCode"`
}

// NewCmdCheck returns `config check`. runF replaces the run function in tests.
func NewCmdCheck(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{IO: f.IOStreams, Clusters: f.Clusters}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Validate the configuration and try every endpoint",
		Long: strings.TrimSpace(`
Validate the configuration, resolve its secrets, then try each endpoint of each selected
cluster (--cluster; default all), in parallel, each within --timeout:

  admin   GET /admin/v2/clusters on adminURL (Pulsar admin REST API)
  pulsar  a partitioned-metadata lookup of the offsets topic
          (persistent://<tenant>/<metadataNamespace>/__consumer_offsets) on serviceURL;
          no producer, consumer, reader or subscription is created
  kafka   a Metadata request (after ApiVersions and SASL) to kafkaBootstrap

serviceURL's hosts are dialled first, so that a refused or unknown host fails at once (the
Pulsar client alone retries it for the whole --timeout). Nothing is written. Each endpoint
is reported ok, failed (with its cause and fix; -o json: cause, fix, and the client's own
error in detail) or not_configured, with its latency.`),
		Example: cmdutil.Examples(`
  kop-offsets config check
  kop-offsets config check --cluster scus --timeout 5s
  kop-offsets config check -o json | jq '.endpoints[] | select(.status == "failed")'
  kop-offsets --admin-url http://127.0.0.1:8080 --bootstrap 127.0.0.1:9092 config check`),
		Args: cmdutil.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Format, err = f.OutputFormat(output.StandardSpec); err != nil {
				return err
			}
			opts.Timeout = f.Flags.Timeout
			opts.ConfigPath = func() string {
				if cfg, err := f.Config(); err == nil {
					return cfg.Path
				}
				return ""
			}
			opts.Prober = &FactoryProber{F: f}
			if runF != nil {
				return runF(opts)
			}
			return checkRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func checkRun(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	clusters, err := opts.Clusters()
	if err != nil {
		return err
	}
	// Everything that needs no network first: secrets and files. Exit 2 on failure.
	if err := preflight(clusters, opts.ConfigPath()); err != nil {
		return err
	}

	res, jobs := endpointJobs(clusters, opts)
	probeAll(ctx, opts, &res, jobs)

	for _, r := range res.Endpoints {
		res.Summary[r.Status]++
	}
	if res.Summary[StatusFailed] > 0 {
		res.ExitCode = outcome.Unreachable
	}
	if err := printResult(opts, &res); err != nil {
		return err
	}
	if res.ExitCode != 0 && opts.Format == output.Table {
		fmt.Fprintf(opts.IO.ErrOut, "%d of %d endpoints failed\n", res.Summary[StatusFailed], len(jobs))
	}
	return cmdutil.SilentError(res.ExitCode)
}

// endpointJob is one probe of one cluster's endpoint; idx is its row in Result.Endpoints.
type endpointJob struct {
	idx   int
	cl    config.Cluster
	kind  string
	probe func(context.Context, config.Cluster) (string, error)
}

// preflight checks what needs no network (secrets, files); its errors are config errors.
func preflight(clusters []config.Cluster, configPath string) error {
	var perrs config.Errors
	for _, cl := range clusters {
		if err := cl.Preflight(configPath); err != nil {
			var es config.Errors
			if errors.As(err, &es) {
				perrs = append(perrs, es...)
			} else {
				return cmdutil.ConfigError(err)
			}
		}
	}
	if len(perrs) > 0 {
		return cmdutil.ConfigError(perrs)
	}

	return nil
}

// endpointJobs lays out one result row per cluster endpoint and a probe for each configured one.
func endpointJobs(clusters []config.Cluster, opts *Options) (Result, []endpointJob) {
	res := Result{SchemaVersion: 1, Config: opts.ConfigPath(), Clusters: config.Names(clusters), Summary: map[string]int{}}
	var jobs []endpointJob
	for _, cl := range clusters {
		for _, e := range []struct {
			kind  string
			url   string
			probe func(context.Context, config.Cluster) (string, error)
		}{
			{EndpointAdmin, cl.AdminURL, opts.Prober.Admin},
			{EndpointPulsar, cl.ServiceURL, opts.Prober.Pulsar},
			{EndpointKafka, strings.Join(cl.KafkaBootstrap, ","), opts.Prober.Kafka},
		} {
			r := EndpointResult{Cluster: cl.Name, Endpoint: e.kind, URL: e.url}
			if e.url == "" {
				r.Status = StatusNotConfigured
			} else {
				jobs = append(jobs, endpointJob{idx: len(res.Endpoints), cl: cl, kind: e.kind, probe: e.probe})
			}
			res.Endpoints = append(res.Endpoints, r)
		}
	}

	return res, jobs
}

// probeAll probes every endpoint at once, each within opts.Timeout.
func probeAll(ctx context.Context, opts *Options, res *Result, jobs []endpointJob) {
	progress := opts.IO.StartProgress("checking endpoints")
	progress.Set(0, int64(len(jobs)))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, j := range jobs {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
			start := time.Now()
			detail, err := runProbe(pctx, opts.Timeout, j.probe, j.cl)
			ms := math.Round(float64(time.Since(start).Microseconds())/100) / 10
			mu.Lock()
			defer mu.Unlock()
			r := &res.Endpoints[j.idx]
			r.LatencyMs = &ms
			r.Detail = detail
			if err != nil {
				e := explain.New(j.cl.Name, explain.Kind(j.kind), r.URL, err).For(j.cl)
				e.Fix, _, _ = strings.Cut(e.Fix, "; then: ") // "then: config check" is this run
				r.Status, r.Error, r.Cause, r.Fix, r.Detail = StatusFailed, e.Short(), e.Cause, e.Fix, e.Detail
			} else {
				r.Status = StatusOK
			}
			progress.Add(1)
		})
	}
	wg.Wait()
	progress.Stop()

}

func printResult(opts *Options, res *Result) error {
	cs := opts.IO.ColorScheme()
	return output.Print(opts.IO, opts.Format, res, func(tp *output.TablePrinter) {
		tp.AddHeader("CLUSTER", "ENDPOINT", "URL", "STATUS", "LATENCY", "DETAIL")
		for _, r := range res.Endpoints {
			lat := "-"
			if r.LatencyMs != nil {
				lat = fmt.Sprintf("%.1fms", *r.LatencyMs)
			}
			detail := r.Detail
			if r.Error != "" {
				detail = r.Error
			}
			status := r.Status
			if tp.IsTTY() {
				status = cs.Status(strings.ToUpper(status))
			}
			tp.AddRow(r.Cluster, r.Endpoint, output.Dash(r.URL), status, lat, output.Dash(detail))
		}
	})
}

// runProbe runs probe and returns no later than ctx's deadline, even if probe does not.
func runProbe(ctx context.Context, timeout time.Duration, probe func(context.Context, config.Cluster) (string, error), cl config.Cluster) (string, error) {
	type res struct {
		detail string
		err    error
	}
	ch := make(chan res, 1)
	go func() {
		d, err := probe(ctx, cl)
		ch <- res{d, err}
	}()
	select {
	case r := <-ch:
		return r.detail, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("no answer within %s: %w", timeout, ctx.Err())
	}
}
