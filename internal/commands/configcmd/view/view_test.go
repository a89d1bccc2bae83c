package view

import (
	"strings"
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/commands/cmdutil"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestNewCmdViewFlags(t *testing.T) {
	tests := []struct {
		args   []string
		tty    bool
		format output.Format
		code   int
	}{
		{nil, true, output.YAML, 0},
		{nil, false, output.YAML, 0},
		{[]string{"-o", "table"}, false, output.Table, 0},
		{[]string{"-o", "json"}, true, output.JSON, 0},
		{[]string{"-o", "ndjson"}, true, "", 2},
		{[]string{"--bogus"}, true, "", 2},
	}
	for _, tt := range tests {
		f, _ := clitest.NewFactory("x", tt.tty)
		got, err := clitest.ParseOptions(f, NewCmdView, tt.args...)
		if code := cmdutil.ExitCode(err); code != tt.code {
			t.Errorf("%v: exit %d (%v), want %d", tt.args, code, err, tt.code)
			continue
		}
		if tt.code == 0 && (got == nil || got.Format != tt.format) {
			t.Errorf("%v: %+v", tt.args, got)
		}
	}
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
