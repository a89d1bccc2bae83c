package connect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/apache/pulsar-client-go/oauth2"
	"github.com/apache/pulsar-client-go/oauth2/cache"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/auth"
	adminconfig "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin/config"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"

	"github.com/kop-offsets/kop-offsets/internal/config"
)

// AdminHTTPClient returns an *http.Client that authenticates to cl's admin API (token,
// token file or OAuth2 client credentials; TLS trust and client certificate), with the
// dial and response-header timeouts of o, and the admin base URL without trailing slash.
// Use it for admin endpoints pulsaradmin lacks; prefer NewAdminClient otherwise.
func AdminHTTPClient(cl config.Cluster, o Options) (*http.Client, string, error) {
	rt, err := AdminTransport(cl, o)
	if err != nil {
		return nil, "", err
	}
	return &http.Client{Transport: rt}, strings.TrimRight(cl.AdminURL, "/"), nil
}

// NewAdminClient returns a pulsaradmin.Client for cl's adminURL (API v2). Pass a context
// with a deadline to its *WithContext methods: the library's own HTTP timeout is long.
func NewAdminClient(cl config.Cluster, o Options) (pulsaradmin.Client, error) {
	rt, err := AdminTransport(cl, o)
	if err != nil {
		return nil, err
	}
	cfg := &adminconfig.Config{WebServiceURL: strings.TrimRight(cl.AdminURL, "/"), PulsarAPIVersion: adminconfig.V2}
	c, err := admin.NewPulsarClientWithAuthProvider(cfg, auth.NewDefaultProvider(rt))
	if err != nil {
		return nil, &config.Error{Cluster: cl.Name, Field: "adminURL", Err: err}
	}
	return c, nil
}

// AdminTransport is the HTTP transport of cl's admin API: TLS trust and client certificate,
// the dial and response-header timeouts of o, and the Pulsar auth (token, token file or OAuth2
// client credentials) added to every request. Every admin client of the project uses it.
func AdminTransport(cl config.Cluster, o Options) (http.RoundTripper, error) {
	o = o.Normalize()
	if cl.AdminURL == "" {
		return nil, notConfigured(cl, "adminURL")
	}
	tlsCfg, err := TLSConfig(cl, "pulsarAuth.tls", cl.PulsarTLS())
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	tr.DialContext = (&net.Dialer{Timeout: o.DialTimeout}).DialContext
	tr.TLSHandshakeTimeout = o.DialTimeout
	tr.ResponseHeaderTimeout = o.RequestTimeout
	tr.TLSClientConfig = tlsCfg
	tr.MaxIdleConnsPerHost = 10

	return withPulsarAuth(cl, tr)
}

// withPulsarAuth wraps tr so that every request carries cl's Pulsar auth: a token, a token
// file (read again on every request) or an OAuth2 client-credentials token.
func withPulsarAuth(cl config.Cluster, tr http.RoundTripper) (http.RoundTripper, error) {
	pa := cl.PulsarAuth
	if pa == nil {
		return tr, nil
	}
	switch {
	case pa.Token != "":
		tok, err := cl.ResolveSecret("pulsarAuth.token", pa.Token)
		if err != nil {
			return nil, err
		}
		return &bearer{base: tr, token: func(context.Context) (string, error) { return tok, nil }}, nil
	case pa.TokenFile != "":
		path := pa.TokenFile
		return &bearer{base: tr, token: func(context.Context) (string, error) {
			// Read on every request, like the Pulsar clients, so a rotated token is used.
			v, err := config.Secret("file:" + path).Resolve()
			if err != nil {
				return "", fmt.Errorf("cluster %q: pulsarAuth.tokenFile: %w", cl.Name, err)
			}
			return v, nil
		}}, nil
	case pa.OAuth2 != nil:
		token, err := oauth2Token(cl)
		if err != nil {
			return nil, err
		}
		return &bearer{base: tr, token: token}, nil
	}
	return tr, nil
}

// oauth2Token returns the token source of cl's OAuth2 client credentials. The token cache
// cannot be cancelled: a request's context bounds only the wait for it.
func oauth2Token(cl config.Cluster) (func(context.Context) (string, error), error) {
	pa := cl.PulsarAuth
	var scopes []string
	if pa.OAuth2.Scope != "" {
		scopes = strings.Fields(pa.OAuth2.Scope)
	}
	flow, err := oauth2.NewDefaultClientCredentialsFlow(oauth2.ClientCredentialsFlowOptions{
		KeyFile: pa.OAuth2.PrivateKey, IssuerURL: pa.OAuth2.IssuerURL, AdditionalScopes: scopes,
	})
	if err != nil {
		return nil, &config.Error{Cluster: cl.Name, Field: "pulsarAuth.oauth2", Err: err}
	}
	src, err := cache.NewDefaultTokenCache(pa.OAuth2.Audience, flow)
	if err != nil {
		return nil, &config.Error{Cluster: cl.Name, Field: "pulsarAuth.oauth2", Err: err}
	}
	return func(ctx context.Context) (string, error) {
		type res struct {
			tok string
			err error
		}
		ch := make(chan res, 1)
		go func() {
			t, err := src.Token()
			if err != nil {
				ch <- res{err: err}
				return
			}
			ch <- res{tok: t.AccessToken}
		}()
		select {
		case r := <-ch:
			if r.err != nil {
				return "", fmt.Errorf("cluster %q: oauth2 token from %s: %w", cl.Name, pa.OAuth2.IssuerURL, r.err)
			}
			return r.tok, nil
		case <-ctx.Done():
			return "", fmt.Errorf("cluster %q: oauth2 token from %s: %w", cl.Name, pa.OAuth2.IssuerURL, ctx.Err())
		}
	}, nil
}

// bearer adds "Authorization: Bearer <token>" to requests that have no Authorization yet.
type bearer struct {
	base  http.RoundTripper
	token func(context.Context) (string, error)
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return b.base.RoundTrip(req)
	}
	tok, err := b.token(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.base.RoundTrip(r)
}

// IsRESTStatus reports whether err is (or wraps) a pulsaradmin REST error with the given
// HTTP status, as the pulsaradmin client returns it (by value or by pointer).
func IsRESTStatus(err error, code int) bool {
	var re rest.Error
	if errors.As(err, &re) {
		return re.Code == code
	}
	var rp *rest.Error
	return errors.As(err, &rp) && rp.Code == code
}
