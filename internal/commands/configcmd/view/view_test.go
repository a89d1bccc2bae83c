package view

import (
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestNewCmdViewFlags(t *testing.T) {
	tests := []clitest.FlagCase[Options]{
		{Args: nil, TTY: true, Want: Options{Format: output.YAML}},
		{Args: nil, TTY: false, Want: Options{Format: output.YAML}},
		{Args: []string{"-o", "table"}, TTY: false, Want: Options{Format: output.Table}},
		{Args: []string{"-o", "json"}, TTY: true, Want: Options{Format: output.JSON}},
		{Args: []string{"-o", "ndjson"}, TTY: true, Err: `invalid output format "ndjson"`},
		{Args: []string{"--bogus"}, TTY: true, Err: "unknown flag: --bogus"},
	}
	clitest.CheckFlags(t, NewCmdView, tests, func(got, want *Options) bool { return got.Format == want.Format })
}

func TestViewRunTTYTable(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	cs := []config.Cluster{
		{Name: "scus", AdminURL: "http://a:1", KafkaBootstrap: []string{"k:1", "k:2"}, Tenant: "public", MetadataNamespace: "__kafka",
			PulsarAuth: &config.PulsarAuth{OAuth2: &config.OAuth2{IssuerURL: "https://i", PrivateKey: "/k"}},
			KafkaAuth:  &config.KafkaAuth{SASL: &config.SASL{Mechanism: "SCRAM-SHA-512", Username: "u", Password: "pw"}, TLS: &config.TLS{CAFile: "/ca"}}},
	}
	err := viewRun(&Options{IO: ios, Format: output.Table, Clusters: func() ([]config.Cluster, error) { return cs, nil }})
	if err != nil {
		t.Fatal(err)
	}
	want := "NAME  ADMIN URL   SERVICE URL  KAFKA BOOTSTRAP  OFFSETS TOPIC                                   PULSAR AUTH  KAFKA AUTH\n" +
		"scus  http://a:1  -            k:1,k:2          persistent://public/__kafka/__consumer_offsets  oauth2       SCRAM-SHA-512+tls\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(out.String(), "pw") {
		t.Error("secret printed")
	}
}
