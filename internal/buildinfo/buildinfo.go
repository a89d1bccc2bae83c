// Package buildinfo holds the version stamped into the binary at build time:
//
//	go build -ldflags "-X github.com/kop-offsets/kop-offsets/internal/buildinfo.Version=v1.2.3 \
//	  -X github.com/kop-offsets/kop-offsets/internal/buildinfo.Commit=$(git rev-parse HEAD) \
//	  -X github.com/kop-offsets/kop-offsets/internal/buildinfo.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
//	  ./cmd/kop-offsets
package buildinfo

import "runtime/debug"

// Set with -ldflags -X at build time.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Info is the build information as printed by `kop-offsets version`.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"goVersion"`
}

// Get returns the build information, falling back to the VCS data that the Go toolchain
// embeds when the -X flags were not given.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info.GoVersion = bi.GoVersion
		if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.time":
				if info.Date == "" {
					info.Date = s.Value
				}
			}
		}
	}
	return info
}
