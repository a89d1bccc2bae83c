package connect

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/auth"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// PulsarClientOptions returns the pulsar.ClientOptions for cl's serviceURL and auth.
func PulsarClientOptions(cl config.Cluster, o Options) (pulsar.ClientOptions, error) {
	o = o.Normalize()
	if cl.ServiceURL == "" {
		return pulsar.ClientOptions{}, notConfigured(cl, "serviceURL")
	}
	opts := pulsar.ClientOptions{
		URL:               cl.ServiceURL,
		ConnectionTimeout: o.DialTimeout,
		OperationTimeout:  o.RequestTimeout,
		Logger:            plog.NewLoggerWithSlog(o.Logger.With("client", "pulsar", "cluster", cl.Name)),
		Description:       "kop-offsets",
	}
	pa := cl.PulsarAuth
	if pa == nil {
		return opts, nil
	}
	if t := pa.TLS; t != nil {
		opts.TLSTrustCertsFilePath = t.CAFile
		opts.TLSAllowInsecureConnection = t.InsecureSkipVerify
		opts.TLSValidateHostname = !t.InsecureSkipVerify
	}
	switch {
	case pa.Token != "":
		tok, err := cl.ResolveSecret("pulsarAuth.token", pa.Token)
		if err != nil {
			return opts, err
		}
		opts.Authentication = pulsar.NewAuthenticationToken(tok)
	case pa.TokenFile != "":
		opts.Authentication = pulsar.NewAuthenticationTokenFromFile(pa.TokenFile)
	case pa.OAuth2 != nil:
		params := map[string]string{
			auth.ConfigParamType:      auth.ConfigParamTypeClientCredentials,
			auth.ConfigParamIssuerURL: pa.OAuth2.IssuerURL,
			auth.ConfigParamKeyFile:   pa.OAuth2.PrivateKey,
			auth.ConfigParamAudience:  pa.OAuth2.Audience,
		}
		if pa.OAuth2.Scope != "" {
			params[auth.ConfigParamScope] = pa.OAuth2.Scope
		}
		p, err := auth.NewAuthenticationOAuth2WithParams(params)
		if err != nil {
			return opts, &config.Error{Cluster: cl.Name, Field: "pulsarAuth.oauth2", Err: err}
		}
		opts.Authentication = p
	}
	if t := pa.TLS; t != nil && t.CertFile != "" {
		if opts.Authentication == nil {
			// A client certificate alone is Pulsar's TLS authentication.
			opts.Authentication = pulsar.NewAuthenticationTLS(t.CertFile, t.KeyFile)
		} else {
			opts.TLSCertificateFile, opts.TLSKeyFilePath = t.CertFile, t.KeyFile
		}
	}
	return opts, nil
}

// NewPulsarClient builds a pulsar.Client for cl. It connects on first use; the caller
// closes it.
func NewPulsarClient(cl config.Cluster, o Options) (pulsar.Client, error) {
	opts, err := PulsarClientOptions(cl, o)
	if err != nil {
		return nil, err
	}
	c, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, &config.Error{Cluster: cl.Name, Field: "serviceURL", Err: err}
	}
	return c, nil
}

// DialService opens (and closes) a TCP connection to each host of serviceURL
// ("pulsar://h1:6650,h2:6650", pulsar+ssl too) within timeout and returns nil as soon as
// one accepts, else the first host's error. pulsar-client-go retries a refused port for its
// whole operation timeout: this makes a refused or unknown host fail in milliseconds.
func DialService(ctx context.Context, serviceURL string, timeout time.Duration) error {
	rest, ok := strings.CutPrefix(serviceURL, "pulsar://")
	port := "6650"
	if !ok {
		if rest, ok = strings.CutPrefix(serviceURL, "pulsar+ssl://"); !ok {
			return fmt.Errorf("serviceURL %q: not pulsar:// or pulsar+ssl://", serviceURL)
		}
		port = "6651"
	}
	rest, _, _ = strings.Cut(rest, "/")
	d := net.Dialer{Timeout: timeout}
	var first error
	for _, h := range strings.Split(rest, ",") {
		addr := h
		if _, _, err := net.SplitHostPort(h); err != nil {
			addr = net.JoinHostPort(h, port)
		}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if first == nil {
			first = err
		}
	}
	return first
}
