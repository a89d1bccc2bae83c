//go:build e2e

package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/lab"
)

// issuer is an OAuth2 authorization server for the client-credentials grant, on 127.0.0.1:
// its discovery document names its token endpoint, which hands out a JWT signed with key
// for role to the one client it knows. The brokers verify that JWT as any token
// (tokenSecretKey), which is how a Pulsar cluster behind an OAuth2 provider works when the
// provider signs with a key the brokers trust.
type issuer struct {
	*httptest.Server
	grants atomic.Int64 // tokens handed out
	denied atomic.Int64 // requests refused (bad client credentials)
}

const (
	oauthClientID     = "kop-offsets"
	oauthClientSecret = "lab-client-secret"
	oauthAudience     = "urn:kop-offsets:lab"
)

func newIssuer(t *testing.T, key []byte, role string) *issuer {
	t.Helper()
	is := &issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": is.URL, "token_endpoint": is.URL + "/oauth/token"})
	})
	mux.HandleFunc("/oauth/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_id") != oauthClientID || r.PostForm.Get("client_secret") != oauthClientSecret ||
			r.PostForm.Get("audience") != oauthAudience {
			is.denied.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "unknown client or secret"})
			return
		}
		tok, err := lab.SignToken(key, role)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		is.grants.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	return is
}

// oauth2Config writes a copy of the lab's config whose Pulsar auth is OAuth2 client
// credentials against is, with a key file holding secret. The Kafka side keeps the lab's
// SASL/PLAIN token.
func oauth2Config(t *testing.T, l *lab.Lab, is *issuer, secret string) string {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "credentials.json")
	b, err := json.Marshal(map[string]string{"type": "client_credentials", "client_id": oauthClientID, "client_secret": secret, "issuer_url": is.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return editedConfig(t, l, filepath.Join(dir, "oauth2.yaml"), func(c *config.Cluster) {
		pa := c.PulsarAuth
		pa.Token, pa.TokenFile = "", ""
		pa.OAuth2 = &config.OAuth2{IssuerURL: is.URL, PrivateKey: keyFile, Audience: oauthAudience}
	})
}

// TestOAuth2ClientCredentials: with `pulsarAuth.oauth2` the commands get their token from the
// issuer (pulsaradmin's flow for the admin API, pulsar-client-go's for the readers) and the
// brokers accept it: check --persisted-only and dump exit 0. A wrong client secret, and a
// token the brokers do not trust, exit 3 naming the cluster and the refusal.
func TestOAuth2ClientCredentials(t *testing.T) {
	l := authLab(t)
	key, err := os.ReadFile(l.Cluster("scus").Auth.Files.SecretKey)
	if err != nil {
		t.Fatal(err)
	}

	good := newIssuer(t, key, lab.SuperuserRole)
	cfg := oauth2Config(t, l, good, oauthClientSecret)
	if rep, code := checkJSON(t, cfg, "--persisted-only"); code != 0 {
		t.Errorf("check --persisted-only with OAuth2: exit %d, %d rows, errors %+v", code, len(rep.Rows), rep.Errors)
	}
	if code, out, _ := runCLI(t, cfg, "--timeout", "60s", "dump", "--cluster", "wus", "--limit", "3", "-o", "ndjson"); code != 0 {
		t.Errorf("dump with OAuth2: exit %d", code)
	} else {
		t.Logf("dump: %d lines", strings.Count(out, "\n"))
	}
	if good.grants.Load() == 0 || good.denied.Load() != 0 {
		t.Errorf("issuer: %d tokens granted, %d requests refused; want tokens and no refusal", good.grants.Load(), good.denied.Load())
	}
	t.Logf("issuer granted %d tokens", good.grants.Load())

	// The issuer refuses the client: nothing reaches Pulsar.
	cfg = oauth2Config(t, l, good, "not-the-secret")
	code, _, errOut := runCLI(t, cfg, "--timeout", "20s", "--cluster", "scus", "check", "--persisted-only")
	if code != 3 || !strings.Contains(errOut, "scus") || !strings.Contains(errOut, "invalid_client") {
		t.Errorf("check with a wrong client secret: exit %d, want 3 naming scus and the issuer's refusal:\n%s", code, errOut)
	}
	if good.denied.Load() == 0 {
		t.Error("the issuer was not asked with the wrong secret")
	}

	// The issuer signs with a key the brokers do not know: the brokers refuse its token.
	rogue := newIssuer(t, []byte(strings.Repeat("r", 32)), lab.SuperuserRole)
	cfg = oauth2Config(t, l, rogue, oauthClientSecret)
	code, _, errOut = runCLI(t, cfg, "--timeout", "20s", "--cluster", "wus", "check", "--persisted-only")
	refused := strings.Contains(errOut, "401") || strings.Contains(errOut, "403") || strings.Contains(strings.ToLower(errOut), "authentication")
	if code != 3 || !strings.Contains(errOut, "wus") || !refused || rogue.grants.Load() == 0 {
		t.Errorf("check with an untrusted issuer's token: exit %d, %d tokens granted, want 3 naming wus and the refusal:\n%s", code, rogue.grants.Load(), errOut)
	}
}
