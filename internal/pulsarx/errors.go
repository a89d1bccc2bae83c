package pulsarx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
)

// Sentinels matched by errors.Is against an *AdminError.
var (
	// ErrNotFound: the admin API answered 404 (tenant, namespace or topic does not exist).
	ErrNotFound = errors.New("not found")
	// ErrUnreachable: no HTTP answer at all (connection refused, DNS, TLS handshake, timeout).
	ErrUnreachable = errors.New("unreachable")
	// ErrAuth: the admin API answered 401 or 403.
	ErrAuth = errors.New("not authorized")
	// ErrServer: the admin API answered 5xx.
	ErrServer = errors.New("server error")
)

// AdminError is what every Admin method returns on failure. Status is the HTTP status, 0 when
// the cluster did not answer.
type AdminError struct {
	Cluster string // cluster name from the config, for the operator
	Op      string // what was attempted, e.g. "get partitioned metadata"
	Target  string // topic, namespace, tenant or bundle the call was about; may be empty
	Status  int
	Err     error // underlying error (rest.Error, *url.Error, ...)
}

func (e *AdminError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s: %s", e.Cluster, e.Op)
	if e.Target != "" {
		fmt.Fprintf(&b, " %s", e.Target)
	}
	switch e.Status {
	case 0:
		fmt.Fprintf(&b, ": unreachable%s", noAnswer(e.Err))
	default:
		fmt.Fprintf(&b, ": http %d", e.Status)
		if r := reason(e.Err); r != "" {
			fmt.Fprintf(&b, ": %s", r)
		}
	}
	return b.String()
}

func (e *AdminError) Unwrap() error { return e.Err }

// Is maps the HTTP status (or its absence) onto the package sentinels.
func (e *AdminError) Is(target error) bool {
	switch target {
	case ErrUnreachable:
		return e.Status == 0
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrAuth:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrServer:
		return e.Status >= 500
	}
	return false
}

// noAnswer says in words why a call got no HTTP answer, with the endpoint it went to (": at
// http://host:port: connection refused"): net/http's own text repeats the method and the whole
// request URL and Go's dial chain, which AdminError.Err keeps for --verbose.
func noAnswer(err error) string {
	at := ""
	if ue, ok := errors.AsType[*url.Error](err); ok {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			at = " at " + u.Scheme + "://" + u.Host
		}
		err = ue.Err
	}
	var dns *net.DNSError
	var ne net.Error
	why := ""
	switch {
	case err == nil:
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "connection refused"
	case errors.As(err, &dns):
		why = "host name not found (DNS): " + dns.Name
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		why = "no answer (timeout)"
	default:
		why = err.Error()
		if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Err != nil {
			why = oe.Err.Error() // without "dial tcp host:port: "
		}
	}
	if why == "" {
		return at
	}
	return at + ": " + why
}

// reason extracts the broker's {"reason": ...} text, which is what an operator needs to read.
func reason(err error) string {
	var re rest.Error
	if errors.As(err, &re) {
		r := strings.TrimSpace(re.Reason)
		// rest.Error falls back to resp.Status ("404 Not Found"): drop the repeated code.
		if i := strings.IndexByte(r, ' '); i > 0 && r[:i] == fmt.Sprint(re.Code) {
			r = r[i+1:]
		}
		// Jetty answers unknown resources with an HTML page: its status text says it all.
		if strings.HasPrefix(r, "<") {
			r = http.StatusText(re.Code)
		}
		return strings.ToLower(r)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// wrap classifies err into an *AdminError. A context cancellation by the caller is returned
// unchanged so callers can tell "I gave up" from "the cluster is down".
func (a *Admin) wrap(ctx context.Context, op, target string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() == context.Canceled {
		return err
	}
	var ae *AdminError
	if errors.As(err, &ae) {
		return err
	}
	e := &AdminError{Cluster: a.cluster, Op: op, Target: target, Err: err}
	var re rest.Error
	switch {
	case errors.As(err, &re):
		e.Status = re.Code
	default:
		// Everything else from net/http is a transport failure: no answer from the cluster.
		var ue *url.Error
		var ne net.Error
		if !errors.As(err, &ue) && !errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) {
			// Not a transport error either (e.g. undecodable body): report it as a server
			// fault rather than claim the cluster is down.
			e.Status = http.StatusInternalServerError
		}
	}
	return e
}

// jsonReason extracts "reason" from a broker error body {"reason":"..."}.
func jsonReason(body []byte) string {
	var v struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.Reason
}

// TrimCluster is err's text without the leading "cluster NAME: " that errors of this package
// carry, for a message that names the cluster itself.
func TrimCluster(err error, cluster string) string {
	s := err.Error()
	for {
		t := strings.TrimPrefix(s, "cluster "+cluster+": ")
		if t == s {
			return s
		}
		s = t
	}
}

// Reason is the broker's reason of an admin error's underlying err (its {"reason"}, else the
// HTTP status text), lower case.
func Reason(err error) string { return reason(err) }

// TimedOut reports whether err is a call that waited out its timeout (no answer), not a
// refusal or an error answer.
func TimedOut(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}
