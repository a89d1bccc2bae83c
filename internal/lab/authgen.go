package lab

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AuthFiles are the files of a token lab, all under lab/run/auth/ (git-ignored with the rest
// of lab/run), shared by its clusters: one secret key signs every token, one CA signs the one
// server certificate (127.0.0.1 is every cluster's host).
type AuthFiles struct {
	Dir       string `json:"dir"`
	SecretKey string `json:"secretKey"` // raw HS256 key bytes: the brokers' tokenSecretKey
	CACert    string `json:"caCert"`    // PEM: tlsTrustCertsFilePath, and the clients' CA
	CAKey     string `json:"caKey"`
	// ServerCert and ServerKey (PKCS#8 PEM, RSA: Pulsar's PEM key loader reads RSA) are the
	// brokers' tlsCertificateFilePath and tlsKeyFilePath, for 127.0.0.1 and localhost.
	ServerCert string `json:"serverCert"`
	ServerKey  string `json:"serverKey"`
	// SuperuserToken is the superuser's JWT alone (pulsarAuth.tokenFile, the brokers' client
	// token); SuperuserKafkaPassword is "token:<that JWT>", KoP's SASL/PLAIN password.
	SuperuserToken         string `json:"superuserToken"`
	SuperuserKafkaPassword string `json:"superuserKafkaPassword"`
	// UserToken and UserKafkaPassword: the same for a role with no permission.
	UserToken         string `json:"userToken"`
	UserKafkaPassword string `json:"userKafkaPassword"`
}

// authFiles names the auth files of the lab at p.
func authFiles(p Paths) AuthFiles {
	d := filepath.Join(p.RunDir(), "auth")
	return AuthFiles{
		Dir:                    d,
		SecretKey:              filepath.Join(d, "secret.key"),
		CACert:                 filepath.Join(d, "ca.pem"),
		CAKey:                  filepath.Join(d, "ca.key"),
		ServerCert:             filepath.Join(d, "server.pem"),
		ServerKey:              filepath.Join(d, "server.key"),
		SuperuserToken:         filepath.Join(d, SuperuserRole+".token"),
		SuperuserKafkaPassword: filepath.Join(d, SuperuserRole+".kafka-password"),
		UserToken:              filepath.Join(d, UserRole+".token"),
		UserKafkaPassword:      filepath.Join(d, UserRole+".kafka-password"),
	}
}

func (f AuthFiles) all() []string {
	return []string{f.SecretKey, f.CACert, f.CAKey, f.ServerCert, f.ServerKey,
		f.SuperuserToken, f.SuperuserKafkaPassword, f.UserToken, f.UserKafkaPassword}
}

// certLifetime: long enough for any lab, short enough to be visibly a lab's.
const certLifetime = 365 * 24 * time.Hour

// GenerateAuthFiles writes a new secret key, the two roles' tokens, a CA and a server
// certificate signed by it into f (files 0600, directory 0700), replacing what was there.
func GenerateAuthFiles(f AuthFiles, now time.Time) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("lab: auth files: %w", err)
	}
	key := make([]byte, 32) // HS256: a 256-bit key, as Pulsar's create-secret-key makes
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if err := writeSecret(f.SecretKey, key); err != nil {
		return err
	}
	for _, r := range []struct{ role, token, password string }{
		{SuperuserRole, f.SuperuserToken, f.SuperuserKafkaPassword},
		{UserRole, f.UserToken, f.UserKafkaPassword},
	} {
		tok, err := SignToken(key, r.role)
		if err != nil {
			return err
		}
		if err := writeSecret(r.token, []byte(tok)); err != nil {
			return err
		}
		if err := writeSecret(r.password, []byte("token:"+tok)); err != nil {
			return err
		}
	}
	return writeCerts(f, now)
}

// SignToken returns a JWT for role signed with key (HS256, subject = role, no expiry), the
// kind Pulsar's AuthenticationProviderToken accepts with tokenSecretKey (its default role
// claim is "sub").
func SignToken(key []byte, role string) (string, error) {
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: role}).SignedString(key)
	if err != nil {
		return "", fmt.Errorf("lab: sign token for %s: %w", role, err)
	}
	return tok, nil
}

// writeCerts writes a self-signed CA and a server certificate for 127.0.0.1 signed by it.
func writeCerts(f AuthFiles, now time.Time) error {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kop-offsets lab CA", Organization: []string{"kop-offsets lab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("lab: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	srvKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	srv := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: Host, Organization: []string{"kop-offsets lab"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP(Host)},
		DNSNames:     []string{"localhost"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("lab: server certificate: %w", err)
	}
	for _, w := range []struct {
		path, kind string
		der        []byte
		key        *rsa.PrivateKey
	}{{f.CACert, "CERTIFICATE", caDER, nil}, {f.CAKey, "", nil, caKey}, {f.ServerCert, "CERTIFICATE", srvDER, nil}, {f.ServerKey, "", nil, srvKey}} {
		der, kind := w.der, w.kind
		if w.key != nil {
			if der, err = x509.MarshalPKCS8PrivateKey(w.key); err != nil {
				return err
			}
			kind = "PRIVATE KEY"
		}
		if err := writeSecret(w.path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// writeSecret writes b to path readable by its owner only, atomically.
func writeSecret(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("lab: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("lab: write %s: %w", path, err)
	}
	return nil
}
