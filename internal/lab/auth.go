package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/connect"
)

// AuthMode is how the lab's clusters authenticate their clients: none (the default, the lab
// as it always was) or token (KOP_LAB_AUTH=token, kop-lab up --auth token).
type AuthMode string

// The lab's auth modes.
const (
	AuthNone  AuthMode = "none"
	AuthToken AuthMode = "token"
)

// orNone is m, or none when unset.
func (m AuthMode) orNone() AuthMode {
	if m == "" {
		return AuthNone
	}
	return m
}

// ParseAuthMode parses $KOP_LAB_AUTH or --auth; empty means none.
func ParseAuthMode(s string) (AuthMode, error) {
	switch AuthMode(strings.ToLower(strings.TrimSpace(s))) {
	case "", AuthNone:
		return AuthNone, nil
	case AuthToken:
		return AuthToken, nil
	}
	return "", fmt.Errorf("lab: auth mode %q: want none or token (KOP_LAB_AUTH, --auth)", s)
}

// Roles of the tokens the lab signs. The superuser's token is what the brokers use among
// themselves (replication, KoP's own clients), what the lab's admin calls and
// lab/run/config.yaml carry; the user's token is valid but has no permission anywhere, for
// tests that kop-offsets reports an authorization failure clearly.
const (
	SuperuserRole = "lab-admin"
	UserRole      = "lab-user"
)

// TLS ports beside the plain ones, below them (scus 18079 and 16649), moved by
// KOP_LAB_PORT_OFFSET like every other port. Not Pulsar's conventional 8443/6651: a
// multi-broker lab (--brokers N) puts broker i on the plain ports plus i, so the TLS ports
// count down instead: broker i's are the plain ports of broker 0 minus 1+i (scus broker 1:
// 18078 and 16648). Below broker 0's plain port nothing else of the lab listens; a lab of
// --brokers N uses N ports there, which stay clear of the lab one KOP_LAB_PORT_OFFSET step
// below as long as that lab runs at most 10-N brokers. The plain ports stay open (with
// token auth): an anonymous call there is refused all the same, and the broker ids Pulsar
// lists ("host:webServicePort") name them.
const (
	webTLSFromWeb       = -1 // 18080 -> 18079 (broker i: -1-i)
	brokerTLSFromBroker = -1 // 16650 -> 16649 (broker i: -1-i)
)

// ClusterAuth is what a cluster of an auth lab adds to the plain one: its TLS endpoints and
// the files its clients authenticate with. Nil on a lab without auth. On a cluster's view
// the ports and URLs are broker 0's; on the view of broker i (Cluster.Broker) broker i's.
type ClusterAuth struct {
	Mode          AuthMode  `json:"mode"`
	WebTLS        int       `json:"webTls"`        // webServicePortTls
	BrokerTLS     int       `json:"brokerTls"`     // brokerServicePortTls
	AdminURLTLS   string    `json:"adminURLTls"`   // https://127.0.0.1:<webTls>
	ServiceURLTLS string    `json:"serviceURLTls"` // pulsar+ssl://127.0.0.1:<brokerTls>
	Files         AuthFiles `json:"files"`
}

// forBroker is a copy of a with broker b's TLS ports and URLs.
func (a *ClusterAuth) forBroker(b Broker) *ClusterAuth {
	v := *a
	if b.WebTLS != 0 {
		v.WebTLS, v.BrokerTLS = b.WebTLS, b.ServiceTLS
		v.AdminURLTLS = fmt.Sprintf("https://%s:%d", Host, b.WebTLS)
		v.ServiceURLTLS = fmt.Sprintf("pulsar+ssl://%s:%d", Host, b.ServiceTLS)
	}
	return &v
}

// withAuth returns cs with their TLS endpoints (each broker's) and auth files filled in for
// mode (unchanged for none).
func withAuth(cs []Cluster, p Paths, mode AuthMode) []Cluster {
	if mode != AuthToken {
		return cs
	}
	out := make([]Cluster, len(cs))
	for i, c := range cs {
		c.Brokers = append([]Broker(nil), c.Brokers...)
		for j := range c.Brokers {
			c.Brokers[j].WebTLS = c.Ports.Web + webTLSFromWeb - j
			c.Brokers[j].ServiceTLS = c.Ports.Broker + brokerTLSFromBroker - j
		}
		web, broker := c.Ports.Web+webTLSFromWeb, c.Ports.Broker+brokerTLSFromBroker
		c.Auth = &ClusterAuth{
			Mode:          mode,
			WebTLS:        web,
			BrokerTLS:     broker,
			AdminURLTLS:   fmt.Sprintf("https://%s:%d", Host, web),
			ServiceURLTLS: fmt.Sprintf("pulsar+ssl://%s:%d", Host, broker),
			Files:         authFiles(p),
		}
		out[i] = c
	}
	return out
}

// AdminURLsTLS is every broker's https web service as one multi-host URL (see AdminURLs),
// empty without auth; ServiceURLsTLS the same for pulsar+ssl.
func (c Cluster) AdminURLsTLS() string {
	if c.Auth == nil {
		return ""
	}
	return multiHost("https", c, func(b Broker) int { return tlsPort(b.WebTLS, c.Auth.WebTLS) })
}

// ServiceURLsTLS is every broker's pulsar+ssl endpoint as one multi-host URL, empty without
// auth.
func (c Cluster) ServiceURLsTLS() string {
	if c.Auth == nil {
		return ""
	}
	return multiHost("pulsar+ssl", c, func(b Broker) int { return tlsPort(b.ServiceTLS, c.Auth.BrokerTLS) })
}

// tlsPort is a broker's TLS port, or the cluster's when the broker does not name one (the
// state of a lab from before per-broker TLS ports).
func tlsPort(broker, cluster int) int {
	if broker != 0 {
		return broker
	}
	return cluster
}

// AuthModeOf is the auth mode of cluster c.
func (c Cluster) AuthModeOf() AuthMode {
	if c.Auth == nil {
		return AuthNone
	}
	return c.Auth.Mode
}

// Config is cluster c as kop-offsets' configuration names it (docs/config.md), the one
// lab/run/config.yaml holds: on an auth lab the https admin URL and pulsar+ssl service URL
// with the lab's CA, the superuser's token file, and KoP's SASL/PLAIN with username the
// tenant and password "token:<jwt>" from a file.
func (c Cluster) Config() config.Cluster {
	cc := config.Cluster{
		Name:              c.Name,
		AdminURL:          c.AdminURL,
		ServiceURL:        c.ServiceURL,
		KafkaBootstrap:    []string{c.KafkaBootstrap},
		Tenant:            Tenant,
		MetadataNamespace: "__kafka",
		KafkaNamespace:    DefaultNamespace,
	}
	if a := c.Auth; a != nil {
		cc.AdminURL, cc.ServiceURL = a.AdminURLTLS, a.ServiceURLTLS
		cc.PulsarAuth = &config.PulsarAuth{TokenFile: a.Files.SuperuserToken, TLS: &config.TLS{CAFile: a.Files.CACert}}
		cc.KafkaAuth = &config.KafkaAuth{SASL: &config.SASL{
			Mechanism: config.MechanismPlain,
			Username:  Tenant,
			Password:  config.Secret("file:" + a.Files.SuperuserKafkaPassword),
		}}
	}
	return cc
}

// adminOptions bound one admin request of the lab's own calls (unloads and lookups can take
// tens of seconds on a busy machine).
var adminOptions = connect.Options{RequestTimeout: 2 * time.Minute}

// NewAdmin returns a pulsaradmin client for cluster c: plain HTTP without auth on a lab
// without auth, else kop-offsets' own admin client (internal/connect) on the https admin URL
// with the lab's CA and the superuser's token, so the lab's admin calls go the way the
// tool's do.
func NewAdmin(c Cluster) (pulsaradmin.Client, error) {
	if c.Auth == nil {
		return pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: c.AdminURL})
	}
	return connect.NewAdminClient(c.Config(), adminOptions)
}

// AdminTransport is the HTTP transport of c's admin API as NewAdmin uses it (with TLS trust
// and the token on an auth lab), for admin calls pulsaradmin lacks.
func AdminTransport(c Cluster) (http.RoundTripper, string, error) {
	if c.Auth == nil {
		return http.DefaultTransport, c.AdminURL, nil
	}
	rt, err := connect.AdminTransport(c.Config(), adminOptions)
	return rt, c.Auth.AdminURLTLS, err
}

// NewPulsarClient returns a Pulsar client of c without a client log: plain on a lab without
// auth, else on pulsar+ssl with the lab's CA and the superuser's token (internal/connect).
func NewPulsarClient(c Cluster) (pulsar.Client, error) {
	if c.Auth == nil {
		return pulsar.NewClient(pulsar.ClientOptions{URL: c.ServiceURL, OperationTimeout: 30 * time.Second, Logger: plog.DefaultNopLogger()})
	}
	o, err := connect.PulsarClientOptions(c.Config(), connect.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	o.Logger = plog.DefaultNopLogger()
	return pulsar.NewClient(o)
}

// clusterData is how cluster o is registered on the others. On an auth lab the registration
// carries its TLS URLs (every broker's, multi-host) and what the replicator needs to reach
// it: the token plugin with the superuser's token file (a path, not the token, is what the
// metadata store keeps), TLS on, and the lab's CA, so replication runs over pulsar+ssl with
// the token.
func clusterData(o Cluster) utils.ClusterData {
	d := utils.ClusterData{Name: o.Name, ServiceURL: o.AdminURLs(), BrokerServiceURL: o.ServiceURLs()}
	if a := o.Auth; a != nil {
		d.ServiceURLTls, d.BrokerServiceURLTls = o.AdminURLsTLS(), o.ServiceURLsTLS()
		d.AuthenticationPlugin = tokenAuthPlugin
		d.AuthenticationParameters = fileURL(a.Files.SuperuserToken)
		d.BrokerClientTLSEnabled = true
		d.BrokerClientTrustCertsFilePath = a.Files.CACert
	}
	return d
}

// sameRegistration reports whether a registered cluster already says what want says (the
// broker may answer nulls as empty strings; every field the lab sets is compared).
func sameRegistration(cur, want utils.ClusterData) bool {
	return cur.ServiceURL == want.ServiceURL && cur.BrokerServiceURL == want.BrokerServiceURL &&
		cur.ServiceURLTls == want.ServiceURLTls && cur.BrokerServiceURLTls == want.BrokerServiceURLTls &&
		cur.AuthenticationPlugin == want.AuthenticationPlugin && cur.AuthenticationParameters == want.AuthenticationParameters &&
		cur.BrokerClientTLSEnabled == want.BrokerClientTLSEnabled && cur.BrokerClientTrustCertsFilePath == want.BrokerClientTrustCertsFilePath
}

// tokenAuthPlugin is the Pulsar Java client's token authentication, for the brokers' own
// clients.
const tokenAuthPlugin = "org.apache.pulsar.client.impl.auth.AuthenticationToken"

// fileURL is path as a file:// URL, the form Pulsar's tokenSecretKey and AuthenticationToken
// parameters read a file from.
func fileURL(path string) string { return "file://" + filepath.ToSlash(path) }

// brokerAuthConf is the auth block of broker.conf.tmpl.
type brokerAuthConf struct {
	SuperuserRole      string
	SecretKeyURL       string // tokenSecretKey
	BrokerClientToken  string // brokerClientAuthenticationParameters
	BrokerClientPlugin string
	WebTLSPort         int
	BrokerTLSPort      int
	// BrokerClientTLS: the brokers' own clients (internal admin, lookups and redirects
	// between brokers, KoP's producers and readers) use the TLS ports with TrustCertsFile.
	BrokerClientTLS     bool
	CertFile, KeyFile   string
	TrustCertsFile      string
	KafkaSASLMechanisms string
}

// brokerAuth is the template data of c's auth block (c is a standalone or the view of one
// broker, Cluster.Broker: its TLS ports are that broker's), nil without auth.
func brokerAuth(c Cluster) *brokerAuthConf {
	a := c.Auth
	if a == nil {
		return nil
	}
	return &brokerAuthConf{
		SuperuserRole:       SuperuserRole,
		SecretKeyURL:        fileURL(a.Files.SecretKey),
		BrokerClientToken:   fileURL(a.Files.SuperuserToken),
		BrokerClientPlugin:  tokenAuthPlugin,
		WebTLSPort:          a.WebTLS,
		BrokerTLSPort:       a.BrokerTLS,
		BrokerClientTLS:     true,
		CertFile:            a.Files.ServerCert,
		KeyFile:             a.Files.ServerKey,
		TrustCertsFile:      a.Files.CACert,
		KafkaSASLMechanisms: "PLAIN",
	}
}

// kafkaSecurityProtocol is the protocol of c's KoP listener: SASL_PLAINTEXT (PLAIN with the
// token) on an auth lab, else PLAINTEXT.
func kafkaSecurityProtocol(c Cluster) string {
	if c.Auth != nil {
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// authPorts are c's TLS ports, none without auth.
func authPorts(c Cluster) []int {
	if c.Auth == nil {
		return nil
	}
	return []int{c.Auth.WebTLS, c.Auth.BrokerTLS}
}

// prepareAuth writes the lab's key, tokens and certificates when mode needs them and they are
// not all there yet (a running lab's are never replaced: only a start gets here).
func prepareAuth(p Paths, mode AuthMode, log io.Writer) error {
	if mode != AuthToken {
		return nil
	}
	f := authFiles(p)
	if f.complete() {
		return nil
	}
	fmt.Fprintf(log, "lab: writing token secret key, tokens (%s, %s), CA and server certificate under %s\n", SuperuserRole, UserRole, f.Dir)
	return GenerateAuthFiles(f, time.Now())
}

// complete reports whether every file of f exists.
func (f AuthFiles) complete() bool {
	for _, path := range f.all() {
		if _, err := os.Stat(path); err != nil {
			return false
		}
	}
	return true
}

// authSummary is what the start log says about c's auth, empty without auth.
func authSummary(c Cluster) string {
	a := c.Auth
	if a == nil {
		return ""
	}
	return fmt.Sprintf(", auth %s (web TLS %d, broker TLS %d)", a.Mode, a.WebTLS, a.BrokerTLS)
}

// kafkaAuthOpts are the franz-go options that authenticate to c's KoP listener (SASL/PLAIN
// with the superuser's token on an auth lab), none without auth.
func kafkaAuthOpts(c Cluster) ([]kgo.Opt, error) {
	if c.Auth == nil {
		return nil, nil
	}
	return connect.KafkaOpts(c.Config(), connect.Options{})
}

// UnloadBundleTo unloads bundle of the metadata namespace on c to broker dest (Pulsar's
// destinationBroker: a broker id as Pulsar lists them), through c's admin URL with the lab's
// transport (TLS and token on an auth lab). pulsaradmin has no call with a destination.
func UnloadBundleTo(ctx context.Context, c Cluster, bundle, dest string) error {
	rt, base, err := AdminTransport(c)
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s/admin/v2/namespaces/%s/%s/unload?destinationBroker=%s", base, MetadataNamespace, bundle, dest)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: rt, Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("%s: unload bundle %s to %s: %w", c.Name, bundle, dest, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: unload bundle %s to %s: %s", c.Name, bundle, dest, resp.Status)
	}
	return nil
}
