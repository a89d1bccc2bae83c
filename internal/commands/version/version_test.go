package version

import (
	"testing"

	"github.com/kop-offsets/kop-offsets/internal/buildinfo"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
	"github.com/kop-offsets/kop-offsets/internal/output"
	"github.com/kop-offsets/kop-offsets/internal/testsupport/clitest"
)

func TestVersionRun(t *testing.T) {
	info := buildinfo.Info{Version: "v1.2.3", Commit: "abc123", Date: "2025-01-02T03:04:05Z", GoVersion: "go1.26"}
	tests := []struct {
		format output.Format
		want   string
	}{
		{output.Table, "kop-offsets version v1.2.3 (commit abc123, built 2025-01-02T03:04:05Z, go1.26)\n"},
		{output.JSON, "{\n  \"schemaVersion\": 1,\n  \"version\": \"v1.2.3\",\n  \"commit\": \"abc123\",\n  \"date\": \"2025-01-02T03:04:05Z\",\n  \"goVersion\": \"go1.26\"\n}\n"},
		{output.YAML, "schemaVersion: 1\nversion: v1.2.3\ncommit: abc123\ndate: \"2025-01-02T03:04:05Z\"\ngoVersion: go1.26\n"},
	}
	for _, tt := range tests {
		ios, _, out, _ := iostreams.Test()
		if err := versionRun(&Options{IO: ios, Format: tt.format, Info: info}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tt.format, out, tt.want)
		}
	}
}

func TestNewCmdVersionLdflags(t *testing.T) {
	old := buildinfo.Version
	buildinfo.Version = "v9.9.9"
	defer func() { buildinfo.Version = old }()
	f, _ := clitest.NewFactory("x", false)
	got, err := clitest.ParseOptions(f, NewCmdVersion, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if got.Info.Version != "v9.9.9" || got.Format != output.JSON {
		t.Errorf("%+v", got)
	}
}
