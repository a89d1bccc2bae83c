// Package connect builds clients from a config.Cluster: a pulsar.Client for the binary
// protocol, a pulsaradmin.Client (and a plain authenticated *http.Client) for the admin
// REST API, and franz-go options for the KoP listeners. Building a client never contacts
// anything: the Pulsar and Kafka clients connect on first use, and the admin client on its
// first request. Secrets are resolved here, when a client is built.
package connect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// Default timeouts.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 15 * time.Second
)

// Options tune every client built here.
type Options struct {
	// DialTimeout bounds establishing one TCP/TLS connection (default 5s, never more than
	// RequestTimeout).
	DialTimeout time.Duration
	// RequestTimeout bounds one request or operation (default 15s). The global --timeout
	// sets it.
	RequestTimeout time.Duration
	// Logger receives the clients' own logs (default: discarded).
	Logger *slog.Logger
}

// Normalize fills in the defaults.
func (o Options) Normalize() Options {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.DialTimeout > o.RequestTimeout {
		o.DialTimeout = o.RequestTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// ErrNotConfigured is wrapped (in a *config.Error) when a cluster lacks the endpoint a
// client needs.
var ErrNotConfigured = errors.New("not configured")

func notConfigured(cl config.Cluster, field string) error {
	if flag, ok := config.AdHocFlag(field); ok && cl.FromFlags {
		// the user typed flags, not a config: name the one to add
		return &config.Error{Field: flag, Msg: "is not given (the command needs it)", Err: ErrNotConfigured}
	}
	return &config.Error{Cluster: cl.Name, Field: field, Msg: "is not configured (the command needs it)", Err: ErrNotConfigured}
}

// TLSConfig builds a *tls.Config from a config.TLS block; nil t yields a default config.
// Files are read now; errors are *config.Error naming field.
func TLSConfig(cl config.Cluster, field string, t *config.TLS) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if t == nil {
		return c, nil
	}
	c.InsecureSkipVerify = t.InsecureSkipVerify //nolint:gosec // the operator asked for it
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &config.Error{Cluster: cl.Name, Field: field + ".caFile", Err: err}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &config.Error{Cluster: cl.Name, Field: field + ".caFile", Msg: fmt.Sprintf("no PEM certificate in %s", t.CAFile)}
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &config.Error{Cluster: cl.Name, Field: field + ".certFile", Err: err}
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
