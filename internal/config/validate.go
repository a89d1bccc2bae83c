package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	// pulsarNameRE is what Pulsar accepts as a cluster name (NamedEntity).
	pulsarNameRE = regexp.MustCompile(`^[-=:.\w]+$`)
	pulsarRE     = regexp.MustCompile(`^[A-Za-z0-9_=:.-]+$`) // tenant and namespace names
	mechanism    = map[string]bool{MechanismPlain: true, MechanismScramSHA256: true, MechanismScramSHA512: true}
)

// adHocFlags are the flags that define the ad-hoc cluster, by the config field each sets.
var adHocFlags = map[string]string{"adminURL": "--admin-url", "serviceURL": "--service-url", "kafkaBootstrap": "--bootstrap"}

// AdHocFlag is the flag that sets field (adminURL, serviceURL, kafkaBootstrap) of the ad-hoc
// cluster; ok false for any other field.
func AdHocFlag(field string) (flag string, ok bool) {
	flag, ok = adHocFlags[field]
	return flag, ok
}

// Validate checks the whole config (after defaults) and returns every problem found as
// Errors, nil when there is none. It neither resolves secrets nor reads files.
func (c *Config) Validate() error {
	var es Errors
	if len(c.Clusters) == 0 {
		es = append(es, &Error{Path: c.Path, Field: "clusters", Msg: "no clusters defined"})
	}
	seen := map[string]int{}
	seenPulsar := map[string]int{}
	for i, cl := range c.Clusters {
		id := cl.Name
		if !c.adHoc && (id == "" || !nameRE.MatchString(id)) {
			id = "#" + strconv.Itoa(i+1)
		}
		add := func(field, format string, args ...any) {
			e := &Error{Path: c.Path, Cluster: id, Field: field, Msg: fmt.Sprintf(format, args...)}
			if flag, ok := adHocFlags[field]; ok && c.adHoc {
				e.Cluster, e.Field = "", flag // the user typed a flag, not a config field
			}
			es = append(es, e)
		}
		switch {
		case c.adHoc: // named after the flags the user typed: checked as URLs below
		case cl.Name == "":
			add("name", "is required")
		case !nameRE.MatchString(cl.Name):
			add("name", "%q must match [a-z0-9][a-z0-9._-]*", cl.Name)
		default:
			if j, dup := seen[cl.Name]; dup {
				add("name", "duplicate name (also cluster #%d)", j+1)
			} else {
				seen[cl.Name] = i
			}
		}
		if cl.PulsarCluster != "" && !pulsarNameRE.MatchString(cl.PulsarCluster) {
			add("pulsarCluster", "%q is not a Pulsar cluster name ([-=:.\\w]+)", cl.PulsarCluster)
		} else if j, dup := seenPulsar[cl.PulsarName()]; dup && cl.Name != "" {
			add("pulsarCluster", "Pulsar cluster name %q is also cluster #%d's (set pulsarCluster to each cluster's own clusterName)", cl.PulsarName(), j+1)
		} else {
			seenPulsar[cl.PulsarName()] = i
		}
		cl.validate(add)
	}
	return es.err()
}

func (cl Cluster) validate(add func(field, format string, args ...any)) {
	if cl.AdminURL == "" && cl.ServiceURL == "" && len(cl.KafkaBootstrap) == 0 {
		add("", "needs at least one of adminURL, serviceURL, kafkaBootstrap")
	}
	if cl.AdminURL != "" {
		if err := checkURL(cl.AdminURL, "http", "https"); err != nil {
			add("adminURL", "%v", err)
		}
	}
	if cl.ServiceURL != "" {
		if err := checkURL(cl.ServiceURL, "pulsar", "pulsar+ssl"); err != nil {
			add("serviceURL", "%v", err)
		}
	}
	for i, b := range cl.KafkaBootstrap {
		if err := checkHostPort(b); err != nil {
			add(fmt.Sprintf("kafkaBootstrap[%d]", i), "%v", err)
		}
	}
	switch {
	case cl.Tenants == nil && !pulsarRE.MatchString(cl.Tenant):
		add("tenant", "%q is not a valid tenant name", cl.Tenant)
	case cl.Tenants != nil && cl.Tenant != "":
		add("tenants", "tenant and tenants are alternatives: set one (tenant: one tenant; tenants: a list, or auto)")
	case cl.Tenants != nil:
		cl.Tenants.validate(add)
	}
	if !pulsarRE.MatchString(cl.MetadataNamespace) {
		add("metadataNamespace", "%q must be a namespace name without the tenant (like __kafka)", cl.MetadataNamespace)
	}
	if parts := strings.Split(cl.KafkaNamespace, "/"); len(parts) != 2 || !pulsarRE.MatchString(parts[0]) || !pulsarRE.MatchString(parts[1]) {
		add("kafkaNamespace", "%q must be <tenant>/<namespace>", cl.KafkaNamespace)
	}
	if pa := cl.PulsarAuth; pa != nil {
		n := 0
		if pa.Token != "" {
			n++
			if err := pa.Token.Check(); err != nil {
				add("pulsarAuth.token", "%v", err)
			}
		}
		if pa.TokenFile != "" {
			n++
		}
		if pa.OAuth2 != nil {
			n++
			o := pa.OAuth2
			if o.IssuerURL == "" {
				add("pulsarAuth.oauth2.issuerURL", "is required")
			} else if err := checkURL(o.IssuerURL, "http", "https"); err != nil {
				add("pulsarAuth.oauth2.issuerURL", "%v", err)
			}
			if o.PrivateKey == "" {
				add("pulsarAuth.oauth2.privateKey", "is required (the client-credentials key file)")
			}
		}
		if n > 1 {
			add("pulsarAuth", "token, tokenFile and oauth2 are mutually exclusive")
		}
		validateTLS("pulsarAuth.tls", pa.TLS, add)
	}
	cl.KafkaAuth.validate("kafkaAuth", add)
}

func (ts *Tenants) validate(add func(field, format string, args ...any)) {
	if !ts.Auto && len(ts.List) == 0 {
		add("tenants", "is empty: list the tenants, or say auto")
	}
	seen := map[string]int{}
	for i, t := range ts.List {
		field := fmt.Sprintf("tenants[%d]", i)
		switch {
		case t.Name == "":
			add(field+".name", "is required")
		case !pulsarRE.MatchString(t.Name):
			add(field+".name", "%q is not a valid tenant name", t.Name)
		default:
			if j, dup := seen[t.Name]; dup {
				add(field+".name", "duplicate tenant %q (also tenants[%d])", t.Name, j)
			}
			seen[t.Name] = i
		}
		if t.KafkaNamespace != "" {
			if parts := strings.Split(t.KafkaNamespace, "/"); len(parts) != 2 || !pulsarRE.MatchString(parts[0]) || !pulsarRE.MatchString(parts[1]) {
				add(field+".kafkaNamespace", "%q must be <tenant>/<namespace>", t.KafkaNamespace)
			}
		}
		t.KafkaAuth.validate(field+".kafkaAuth", add)
	}
}

func (ka *KafkaAuth) validate(prefix string, add func(field, format string, args ...any)) {
	if ka == nil {
		return
	}
	if s := ka.SASL; s != nil {
		if !mechanism[s.Mechanism] {
			add(prefix+".sasl.mechanism", "%q must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.Mechanism)
		}
		if s.Username == "" {
			add(prefix+".sasl.username", "is required")
		}
		if s.Password == "" {
			add(prefix+".sasl.password", "is required")
		} else if err := s.Password.Check(); err != nil {
			add(prefix+".sasl.password", "%v", err)
		}
	}
	validateTLS(prefix+".tls", ka.TLS, add)
}

func validateTLS(field string, t *TLS, add func(field, format string, args ...any)) {
	if t == nil {
		return
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		add(field, "certFile and keyFile go together")
	}
}

func checkURL(s string, schemes ...string) error {
	if !strings.Contains(s, "://") {
		// Go's parser reads "127.0.0.1:8080" as a path and "broker:8080" as scheme "broker":
		// both say less than what is missing.
		return fmt.Errorf("%q has no scheme: write %s://%s", s, schemes[0], s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	ok := false
	for _, sc := range schemes {
		if u.Scheme == sc {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("%q must start with %s://", s, strings.Join(schemes, ":// or "))
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Errorf("%q must be host:port", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q has an invalid port", s)
	}
	return nil
}

// Preflight resolves the cluster's secrets and checks that every file it names can be
// read, without contacting anything. Errors are *Error (Errors when several) wrapping
// ErrSecret or the file error.
func (cl Cluster) Preflight(path string) error {
	var es Errors
	add := func(field string, err error) {
		es = append(es, &Error{Path: path, Cluster: cl.Name, Field: field, Err: fmt.Errorf("%w: %w", ErrSecret, err)})
	}
	file := func(field, p string) {
		if p == "" {
			return
		}
		f, err := os.Open(p)
		if err != nil {
			add(field, err)
			return
		}
		_ = f.Close()
	}
	tls := func(prefix string, t *TLS) {
		if t == nil {
			return
		}
		file(prefix+".caFile", t.CAFile)
		file(prefix+".certFile", t.CertFile)
		file(prefix+".keyFile", t.KeyFile)
	}
	if pa := cl.PulsarAuth; pa != nil {
		if pa.Token != "" {
			if _, err := pa.Token.Resolve(); err != nil {
				add("pulsarAuth.token", err)
			}
		}
		file("pulsarAuth.tokenFile", pa.TokenFile)
		if pa.OAuth2 != nil {
			p := pa.OAuth2.PrivateKey
			if strings.HasPrefix(p, "file://") {
				file("pulsarAuth.oauth2.privateKey", strings.TrimPrefix(p, "file://"))
			} else if !strings.HasPrefix(p, "data:") {
				file("pulsarAuth.oauth2.privateKey", p)
			}
		}
		tls("pulsarAuth.tls", pa.TLS)
	}
	kafka := func(prefix string, ka *KafkaAuth) {
		if ka == nil {
			return
		}
		if ka.SASL != nil {
			if _, err := ka.SASL.Password.Resolve(); err != nil {
				add(prefix+".sasl.password", err)
			}
		}
		tls(prefix+".tls", ka.TLS)
	}
	kafka("kafkaAuth", cl.KafkaAuth)
	if cl.Tenants != nil {
		for i, t := range cl.Tenants.List {
			kafka(fmt.Sprintf("tenants[%d].kafkaAuth", i), t.KafkaAuth)
		}
	}
	return es.err()
}

// ResolveSecret resolves s for field of cluster cl; the error is an *Error wrapping ErrSecret.
func (cl Cluster) ResolveSecret(field string, s Secret) (string, error) {
	v, err := s.Resolve()
	if err != nil {
		return "", &Error{Cluster: cl.Name, Field: field, Err: fmt.Errorf("%w: %w", ErrSecret, err)}
	}
	return v, nil
}
