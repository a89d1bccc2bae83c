// Package explain turns the failure of one endpoint of one cluster into what an operator
// needs to act on it: the cluster, the endpoint kind (admin: Pulsar's admin REST API;
// pulsar: the binary protocol of serviceURL; kafka: KoP's Kafka listener), its URL, a short
// cause (connection refused, timeout, DNS, TLS, authorization, not a Pulsar admin API, ...)
// and the fix. It is the one place where library errors (net/http's, pulsaradmin's,
// pulsar-client-go's, franz-go's) are read; the library's own text is kept as Detail.
package explain

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/apache/pulsar-client-go/oauth2"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/pulsarx"
)

// Kind is an endpoint kind of a cluster.
type Kind string

// The endpoint kinds, as config check names them.
const (
	Admin  Kind = "admin"  // adminURL: Pulsar's admin REST API
	Pulsar Kind = "pulsar" // serviceURL: Pulsar's binary protocol
	Kafka  Kind = "kafka"  // kafkaBootstrap: KoP's Kafka listener
)

// The causes an endpoint failure is reduced to.
const (
	CauseRefused     = "connection refused"
	CauseTimeout     = "no answer (timeout)"
	CauseDNS         = "host name not found (DNS)"
	CauseTLS         = "TLS handshake failed"
	CauseAuth        = "not authorized"
	CauseNotAdminAPI = "not a Pulsar admin API"
	CauseNotFound    = "not found"
	CauseServer      = "server error"
)

// Error is one endpoint's failure, explained. Its JSON form is the fields every JSON error
// of the tool carries: cluster, endpoint, url, cause, fix (and the library's detail).
type Error struct {
	Cluster  string `json:"cluster"`
	Endpoint Kind   `json:"endpoint"`
	URL      string `json:"url,omitempty"`
	// What is the call that failed ("get partitioned metadata of persistent://..."), when known.
	What   string `json:"what,omitempty"`
	Cause  string `json:"cause"`
	Fix    string `json:"fix,omitempty"`
	Detail string `json:"detail,omitempty"` // the underlying error's own text
	Err    error  `json:"-"`
}

// Error is the one line of what failed: cluster, endpoint kind and URL, cause and the call
// that failed, each named once. The fix is not in it: renderers print it on a line of its
// own (Lines), where it fits the 200 characters a terminal shows.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s: %s", e.Cluster, e.Endpoint)
	if e.URL != "" {
		fmt.Fprintf(&b, " %s", e.URL)
	}
	b.WriteString(": " + e.Cause)
	if e.What != "" {
		b.WriteString(" (" + e.What + ")")
	}
	return b.String()
}

// Lines are the error and its fix as a command prints them on stderr: "error: " and the line,
// then "  fix: " and the fix when there is one.
func (e *Error) Lines() string { return Lines(e.Error(), e.Fix) }

// Lines is the one style of an error on stderr: the prefix "error: ", what failed and why on
// one line, and the fix on the next.
func Lines(line, fix string) string {
	s := "error: " + line + "\n"
	if fix != "" {
		s += "  fix: " + fix + "\n"
	}
	return s
}

// Short is the line without cluster, endpoint and URL, for a row that shows those already.
func (e *Error) Short() string {
	s := e.Cause
	if e.What != "" {
		s += " (" + e.What + ")"
	}
	if e.Fix != "" {
		s += "; fix: " + e.Fix
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// New explains err, a failure of the endpoint kind at url of cluster. A pulsarx.AdminError is
// always an admin call, whatever kind says: the persisted side of a check starts with one.
// An err that is already an *Error is returned as it is.
func New(cluster string, kind Kind, url string, err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	e := &Error{Cluster: cluster, Endpoint: kind, URL: url, Err: err}
	if ae, ok := errors.AsType[*pulsarx.AdminError](err); ok {
		if kind != Admin {
			e.Endpoint, e.URL = Admin, ""
		}
		e.What = strings.TrimSpace(ae.Op + " " + ae.Target)
	}
	if se, ok := errors.AsType[*kadm.ShardErrors](err); ok && len(se.Errs) > 0 {
		e.Cause, e.Detail = shardCause(se)
		if e.What == "" {
			e.What = se.Name
		}
	} else {
		e.Cause, e.Detail = cause(err)
	}
	if ae, ok := errors.AsType[*pulsarx.AdminError](err); ok && ae.Status == 0 && ae.Err != nil {
		e.Detail = ae.Err.Error() // net/http's own text, which AdminError's shortens
	}
	e.Fix = fix(cluster, e.Endpoint, e.Cause)
	return e
}

// Of is New's cause without the rest: the short cause of err.
func Of(err error) string {
	c, _ := cause(err)
	return c
}

// shardCause is the cause of franz-go's "N separate shard errors": the per-broker causes, so
// that no count of shards reaches the user.
func shardCause(se *kadm.ShardErrors) (string, string) {
	var causes, details []string
	for _, s := range se.Errs {
		c, d := cause(s.Err)
		broker, addr := "broker", net.JoinHostPort(s.Broker.Host, strconv.Itoa(int(s.Broker.Port)))
		switch {
		case s.Broker.Host != "" && s.Broker.NodeID >= 0:
			broker = fmt.Sprintf("broker %d (%s)", s.Broker.NodeID, addr)
		case s.Broker.Host != "":
			broker = "bootstrap " + addr // franz-go's seeds have negative ids
		}
		causes = append(causes, c)
		details = append(details, broker+": "+d)
	}
	slices.Sort(causes)
	causes = slices.Compact(causes)
	c := strings.Join(causes, ", ")
	if n := len(se.Errs); n > 1 {
		c += fmt.Sprintf(" (%d brokers)", n)
	}
	return c, strings.Join(details, "; ")
}

// cause is the short cause of err and its own text.
func cause(err error) (string, string) {
	if err == nil {
		return "", ""
	}
	detail := err.Error()
	var dnsErr *net.DNSError
	var ke *kerr.Error
	var te *oauth2.TokenError
	code, why := httpStatus(err)
	switch {
	case errors.As(err, &te):
		// The OAuth2 issuer refused the client before anything reached Pulsar: its own error
		// code (invalid_client, unauthorized_client, ...) says which setting is wrong.
		return CauseAuth + " by the OAuth2 issuer: " + te.Error(), detail
	case code == http.StatusNotFound && why == "":
		return CauseNotAdminAPI + " (http 404)", detail
	case code == http.StatusNotFound:
		return CauseNotFound + ": " + why, detail
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("%s (http %d)", CauseAuth, code), detail
	case code >= 500:
		return strings.TrimSuffix(fmt.Sprintf("%s (http %d): %s", CauseServer, code, why), ": "), detail
	case code != 0:
		return strings.TrimSuffix(fmt.Sprintf("http %d: %s", code, why), ": "), detail
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseRefused, detail
	case errors.As(err, &dnsErr):
		return CauseDNS + ": " + dnsErr.Name, detail
	case isTLS(err):
		return CauseTLS + ": " + tlsReason(err), detail
	case errors.As(err, &ke) && (ke == kerr.SaslAuthenticationFailed || ke == kerr.IllegalSaslState || ke == kerr.UnsupportedSaslMechanism ||
		ke == kerr.TopicAuthorizationFailed || ke == kerr.GroupAuthorizationFailed || ke == kerr.ClusterAuthorizationFailed):
		return CauseAuth + " (" + ke.Message + ")", detail
	case isTimeout(err):
		return CauseTimeout, detail
	}
	// pulsar-client-go's errors carry no types for these: its text says it.
	switch l := strings.ToLower(detail); {
	case strings.Contains(l, "connection refused"):
		return CauseRefused, detail
	case strings.Contains(l, "authenticat") || strings.Contains(l, "authoriz") || strings.Contains(l, "unauthorized"):
		return CauseAuth, detail
	case strings.Contains(l, "timeout") || strings.Contains(l, "timed out"):
		return CauseTimeout, detail
	}
	return detail, detail
}

// httpStatus is the HTTP status of an admin API answer in err (pulsarx's or pulsaradmin's
// error; 0: no answer) and the broker's own reason when Pulsar gave one (its JSON
// {"reason"}): "" for an empty or HTML body, Jetty's page for a path it does not serve or a
// server that is not Pulsar.
// pulsarReason matches the reasons Pulsar gives a 404: they name what does not exist.
var pulsarReason = regexp.MustCompile(`(?i)\b(topic|namespace|tenant|cluster|subscription|bundle|broker|partition)`)

func httpStatus(err error) (int, string) {
	var code int
	var ae *pulsarx.AdminError
	var re rest.Error
	var rp *rest.Error
	switch {
	case errors.As(err, &ae):
		code = ae.Status
	case errors.As(err, &re):
		code = re.Code
	case errors.As(err, &rp):
		code = rp.Code
	}
	if code == 0 {
		return 0, ""
	}
	r := pulsarx.Reason(err)
	if r == "" || strings.EqualFold(r, http.StatusText(code)) || strings.HasPrefix(r, "<") {
		r = ""
	}
	if code == http.StatusNotFound && !pulsarReason.MatchString(r) {
		r = "" // "404 page not found" and the like: not Pulsar's
	}
	return code, r
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func isTLS(err error) bool {
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var al tls.AlertError
	return errors.As(err, &rh) || errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &he) ||
		errors.As(err, &ci) || errors.As(err, &al) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

func tlsReason(err error) string {
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case errors.As(err, &rh), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the server does not speak TLS"
	case errors.As(err, &ua):
		return "certificate signed by an unknown authority"
	case errors.As(err, &he):
		return "certificate is not valid for this host name"
	}
	return "certificate not accepted"
}

// field is the config field of an endpoint kind.
func field(k Kind) string {
	switch k {
	case Admin:
		return "adminURL"
	case Pulsar:
		return "serviceURL"
	}
	return "kafkaBootstrap"
}

// fix is what to do about cause on endpoint kind k of cluster. It says "its" for the cluster:
// the line it ends names the cluster already; only the command to run next names it again.
func fix(cluster string, k Kind, cause string) string {
	check := fmt.Sprintf("then: kop-offsets --cluster %s config check", cluster)
	switch {
	case strings.HasPrefix(cause, CauseRefused):
		switch k {
		case Admin:
			return "start its brokers or correct its adminURL (the web service port, 8080 by default); " + check
		case Pulsar:
			return "start its brokers or correct its serviceURL (the broker service port, 6650 by default); " + check
		}
		return "load KoP on its brokers (messagingProtocols=kafka) or correct its kafkaBootstrap to match kafkaAdvertisedListeners; " + check
	case strings.HasPrefix(cause, CauseTimeout):
		return fmt.Sprintf("the host does not answer: a firewall, a cut link or a stopped broker (raise --timeout if it is only slow); %s", check)
	case strings.HasPrefix(cause, CauseDNS):
		return fmt.Sprintf("correct the host name in its %s", field(k))
	case strings.HasPrefix(cause, CauseTLS):
		if k == Kafka {
			return "check its kafkaAuth.tls (caFile, insecureSkipVerify) and that the listener uses TLS"
		}
		return "check its pulsarAuth.tls (caFile, insecureSkipVerify) and that the URL's scheme (https, pulsar+ssl) matches the port"
	case strings.HasPrefix(cause, CauseAuth+" by the OAuth2 issuer"):
		return "check its pulsarAuth.oauth2: issuerUrl, audience and the client id and secret of its privateKey file"
	case strings.HasPrefix(cause, CauseAuth):
		if k == Kafka {
			return "check its kafkaAuth.sasl (KoP: username the tenant, password token:<jwt>)"
		}
		return "check its pulsarAuth: the token is missing, expired or lacks the rights (locate and reload need super-user or namespace admin)"
	case strings.HasPrefix(cause, CauseNotAdminAPI):
		return "its adminURL must be Pulsar's web service (webServicePort, 8080 by default) without a path"
	case strings.HasPrefix(cause, CauseNotFound):
		return fmt.Sprintf("check its tenant and metadataNamespace (KoP's kafkaMetadataTenant and kafkaMetadataNamespace) and that KoP is loaded; then: kop-offsets --cluster %s doctor", cluster)
	case strings.HasPrefix(cause, CauseServer):
		return "read its broker log"
	}
	return ""
}

// URLs are cl's endpoints by kind, as errors name them.
func URLs(cl config.Cluster) map[Kind]string {
	return map[Kind]string{Admin: cl.AdminURL, Pulsar: cl.ServiceURL, Kafka: strings.Join(cl.KafkaBootstrap, ",")}
}

// WithURLs sets e's URL from cl's endpoint of e's kind, when e has none, and returns e.
func (e *Error) WithURLs(cl config.Cluster) *Error {
	if e.URL == "" {
		e.URL = URLs(cl)[e.Endpoint]
	}
	return e
}

// For is e about cluster cl: its URL from cl's endpoint when e has none, its fix for a
// cluster defined by flags (FixFor).
func (e *Error) For(cl config.Cluster) *Error {
	e.Fix = FixFor(cl, e.WithURLs(cl).Fix)
	return e
}

// FixFor is fix as it reads for cl: unchanged for a cluster of the config file; for the
// ad-hoc cluster (config.Cluster.FromFlags) FlagFix.
func FixFor(cl config.Cluster, fix string) string {
	if !cl.FromFlags {
		return fix
	}
	return FlagFix(cl.Name, URLs(cl), fix)
}

// flagFields names the ad-hoc cluster's endpoints by the flags that set them.
var flagFields = strings.NewReplacer("its adminURL", "--admin-url", "its serviceURL", "--service-url", "its kafkaBootstrap", "--bootstrap")

// FlagFix is fix for the ad-hoc cluster named name, whose endpoints urls are (URLs): the flag
// to correct instead of a config field, and the command to run next with those flags, as
// --cluster name would select nothing without them.
func FlagFix(name string, urls map[Kind]string, fix string) string {
	var flags []string
	for _, f := range []struct {
		k    Kind
		flag string
	}{{Admin, "--admin-url"}, {Pulsar, "--service-url"}, {Kafka, "--bootstrap"}} {
		if urls[f.k] != "" {
			flags = append(flags, f.flag+" "+urls[f.k])
		}
	}
	fix = strings.ReplaceAll(fix, "kop-offsets --cluster "+name+" ", "kop-offsets "+strings.Join(flags, " ")+" ")
	return flagFields.Replace(fix)
}

// WithTenant puts --tenant tenant into the kop-offsets command lines of a fix or message
// (where they lack one): in a multi-tenant report the command must select the tenant.
func WithTenant(s, tenant string) string {
	if tenant == "" || !strings.Contains(s, "kop-offsets ") || strings.Contains(s, "--tenant") {
		return s
	}
	return strings.ReplaceAll(s, "kop-offsets ", "kop-offsets --tenant "+tenant+" ")
}
