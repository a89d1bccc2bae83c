package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// KoPMode says whether the lab loads KoP: off, auto (when the NAR resolves) or required.
type KoPMode string

// The KoP modes.
const (
	KoPOff      KoPMode = "off"      // never load KoP
	KoPAuto     KoPMode = "auto"     // load KoP when its NAR resolves
	KoPRequired KoPMode = "required" // fail when the NAR does not resolve
)

// ParseKoPMode reads a KOP value; empty means auto.
func ParseKoPMode(s string) (KoPMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return KoPAuto, nil
	case "off", "0", "false", "no":
		return KoPOff, nil
	case "required", "require", "on", "1", "true", "yes":
		return KoPRequired, nil
	}
	return "", fmt.Errorf("lab: KOP=%q: want off, auto or required", s)
}

// KoPStatus records whether KoP is loaded and why.
type KoPStatus struct {
	Mode    KoPMode `json:"mode"`
	Version string  `json:"version"`
	Enabled bool    `json:"enabled"`
	Reason  string  `json:"reason"`
	Nar     string  `json:"nar,omitempty"` // the NAR the brokers load
	// Source says where the NAR came from: "KOP_NAR" (brought by the user), "maven" (the kop
	// profile of lab/pom.xml) or "protocols" (found in lab/run/protocols/).
	Source       string    `json:"source,omitempty"`
	Origin       string    `json:"origin,omitempty"` // the file KOP_NAR named
	SHA256       string    `json:"sha256,omitempty"`
	HandlerClass string    `json:"handlerClass,omitempty"`
	VersionFrom  string    `json:"versionFrom,omitempty"` // where Version was read from the NAR
	HandlerDir   string    `json:"handlerDir,omitempty"`  // protocolHandlerDirectory of the brokers
	Command      string    `json:"command,omitempty"`     // the mvn command that tried to resolve it
	MavenError   string    `json:"mavenError,omitempty"`  // its first [ERROR] line
	ProbedAt     time.Time `json:"probedAt,omitzero"`
}

// KoPProbeTTL is how long a failed resolution is trusted before mvn is asked again (Maven's
// own update policy for a missing artifact is daily). KOP_PROBE=1 forces a new attempt.
const KoPProbeTTL = 24 * time.Hour

// ErrKoPRequired is wrapped by Up when KOP=required and no KoP NAR resolves.
var ErrKoPRequired = errors.New("lab: KOP=required but the KoP protocol handler is not available")

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// FirstMavenError returns the first "[ERROR] ..." line of Maven output, without colour codes.
func FirstMavenError(out string) string {
	for _, line := range strings.Split(ansi.ReplaceAllString(out, ""), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[ERROR]") && strings.TrimSpace(strings.TrimPrefix(line, "[ERROR]")) != "" {
			return line
		}
	}
	return ""
}

func mvnBinary() string {
	if m := os.Getenv("MVN"); m != "" {
		return m
	}
	return "mvn"
}

// runMaven runs mvn quietly in batch mode on lab/pom.xml and returns its combined output.
func runMaven(ctx context.Context, p Paths, args ...string) (string, string, error) {
	full := append([]string{"-B", "-ntp", "-q", "-f", p.Pom()}, args...)
	cmd := exec.CommandContext(ctx, mvnBinary(), full...)
	cmd.Dir = p.LabDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return "mvn " + strings.Join(full, " "), ansi.ReplaceAllString(out.String(), ""), err
}

// DistReady reports whether the unpacked distribution of Pulsar version v is in place.
func DistReady(p Paths, v string) bool {
	if _, err := os.Stat(p.DistMarker(v)); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(p.Dist(v), "lib", "org.apache.pulsar-pulsar-broker-"+v+".jar"))
	return err == nil
}

// EnsureDist resolves and unpacks the Pulsar distribution of version v through lab/pom.xml
// (-Dpulsar.version), unless its marker says it is already there (then mvn is not run at all).
func EnsureDist(ctx context.Context, p Paths, v string, log io.Writer) (ran bool, err error) {
	if DistReady(p, v) {
		return false, nil
	}
	start := time.Now()
	fmt.Fprintf(log, "lab: resolving org.apache.pulsar:pulsar-server-distribution:%s:tar.gz:bin with Maven\n", v)
	cmdline, out, err := runMaven(ctx, p, "-Dpulsar.version="+v, "package")
	if err != nil {
		msg := FirstMavenError(out)
		if msg == "" {
			msg = tail(out, 20)
		}
		return true, fmt.Errorf("lab: Pulsar %s (PULSAR_VERSION): %s failed: %w\n%s", v, cmdline, err, msg)
	}
	if _, err := os.Stat(filepath.Join(p.Dist(v), "lib")); err != nil {
		return true, fmt.Errorf("lab: %s succeeded but %s is missing", cmdline, p.Dist(v))
	}
	if err := os.WriteFile(p.DistMarker(v), []byte(v+"\n"), 0o644); err != nil {
		return true, err
	}
	fmt.Fprintf(log, "lab: distribution ready in %s (%s)\n", p.Dist(v), time.Since(start).Round(time.Millisecond))
	return true, nil
}

// ResolveBYO checks and installs the NAR the user brought (KOP_NAR, kop-lab up --kop-nar).
// KOP=off still wins: the NAR is then not even read.
func ResolveBYO(p Paths, mode KoPMode, nar string) (KoPStatus, error) {
	st := KoPStatus{Mode: mode, Source: "KOP_NAR", Origin: nar}
	if mode == KoPOff {
		st.Reason = "KOP=off (KOP_NAR=" + nar + " not used)"
		return st, nil
	}
	info, err := InspectNar(nar)
	if err != nil {
		return st, err
	}
	dst, err := installNar(p, info)
	if err != nil {
		return st, err
	}
	st.Origin = info.Path
	st.Enabled, st.Nar, st.HandlerDir = true, dst, p.BYONarDir()
	st.Version, st.VersionFrom, st.SHA256, st.HandlerClass = info.Version, info.VersionFrom, info.SHA256, info.HandlerClass
	st.Reason = fmt.Sprintf("KoP %s from KOP_NAR=%s (sha256 %s)", info.Version, info.Path, info.SHA256)
	return st, nil
}

// describeNar checks a NAR found in lab/run/protocols/ (Maven's copy, or one put there by
// hand) the same way as a brought one, and records what it is.
func describeNar(st *KoPStatus, p Paths, nar, source string) error {
	info, err := InspectNar(nar)
	if err != nil {
		return err
	}
	st.Enabled, st.Nar, st.Source, st.HandlerDir = true, nar, source, p.ProtocolsDir()
	st.SHA256, st.HandlerClass, st.VersionFrom = info.SHA256, info.HandlerClass, info.VersionFrom
	return nil
}

// ResolveKoP decides whether KoP is loaded: it looks for the NAR, else asks Maven for it
// through the kop profile of lab/pom.xml (or trusts a recent failed attempt). In auto mode a
// failure is reported in the status and the lab carries on without KoP; in required mode it is
// an error wrapping ErrKoPRequired.
func ResolveKoP(ctx context.Context, p Paths, mode KoPMode, version string, log io.Writer) (KoPStatus, error) {
	st := KoPStatus{Mode: mode, Version: version}
	if mode == KoPOff {
		st.Reason = "KOP=off"
		return st, nil
	}
	nar := p.KoPNar(version)
	if fi, err := os.Stat(nar); err == nil && fi.Size() > 0 {
		if err := describeNar(&st, p, nar, "protocols"); err != nil {
			return st, err
		}
		st.Reason = "KoP " + version + " NAR at " + nar + " (sha256 " + st.SHA256 + ")"
		return st, nil
	}
	if cached, ok := readProbe(p, version); ok && os.Getenv("KOP_PROBE") != "1" {
		st.Command, st.MavenError, st.ProbedAt = cached.Command, cached.MavenError, cached.ProbedAt
	} else {
		fmt.Fprintf(log, "lab: resolving KoP io.streamnative.pulsar.handlers:pulsar-protocol-handler-kafka:%s with Maven\n", version)
		if err := os.MkdirAll(p.ProtocolsDir(), 0o755); err != nil {
			return st, err
		}
		// -U: re-ask the repository even when an earlier miss is cached in ~/.m2.
		cmdline, out, err := runMaven(ctx, p, "-U", "-Pkop", "-Dpulsar.skip=true", "-Dkop.version="+version, "generate-resources")
		st.Command, st.ProbedAt = cmdline, time.Now().UTC()
		if err == nil {
			if fi, serr := os.Stat(nar); serr == nil && fi.Size() > 0 {
				_ = os.Remove(p.KoPProbe(version))
				if err := describeNar(&st, p, nar, "maven"); err != nil {
					return st, err
				}
				st.Reason = "KoP " + version + " NAR resolved to " + nar + " (sha256 " + st.SHA256 + ")"
				return st, nil
			}
			st.MavenError = "mvn succeeded but " + nar + " is missing"
		} else {
			st.MavenError = FirstMavenError(out)
			if st.MavenError == "" {
				st.MavenError = oneLine(tail(out, 5)) + " (" + err.Error() + ")"
			}
		}
		writeProbe(p, version, st)
	}
	st.Reason = "KoP " + version + " not resolvable from Maven: " + st.MavenError + "; bring a NAR with KOP_NAR=/path/to/pulsar-protocol-handler-kafka-<v>.nar (docs/lab.md)"
	if mode == KoPRequired {
		return st, fmt.Errorf("%w: %s\n  command: %s", ErrKoPRequired, st.Reason, st.Command)
	}
	fmt.Fprintf(log, "lab: KoP off, carrying on with Pulsar only: %s\n  command: %s\n", st.Reason, st.Command)
	return st, nil
}

func readProbe(p Paths, version string) (KoPStatus, bool) {
	b, err := os.ReadFile(p.KoPProbe(version))
	if err != nil {
		return KoPStatus{}, false
	}
	var st KoPStatus
	if json.Unmarshal(b, &st) != nil || st.MavenError == "" || time.Since(st.ProbedAt) > KoPProbeTTL {
		return KoPStatus{}, false
	}
	return st, true
}

func writeProbe(p Paths, version string, st KoPStatus) {
	b, _ := json.MarshalIndent(st, "", "  ")
	_ = os.WriteFile(p.KoPProbe(version), b, 0o644)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// DefaultKafkaClientsVersion is the Java Kafka client of the KoP suite's Java consumer: a
// 2.8-era client, like the user's.
const DefaultKafkaClientsVersion = "2.8.2"

// KafkaClientsClasspath resolves org.apache.kafka:kafka-clients:v through the kafka-clients
// profile of lab/pom.xml (once; the classpath file is kept in lab/run/) and returns the
// classpath for lab/java/FirstRecord.java.
func KafkaClientsClasspath(ctx context.Context, p Paths, v string) (string, error) {
	file := filepath.Join(p.RunDir(), "kafka-clients-"+v+".classpath")
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	cmdline, out, err := runMaven(ctx, p, "-Pkafka-clients", "-Dpulsar.skip=true", "-Dkafka.clients.version="+v, "generate-resources")
	if err != nil {
		msg := FirstMavenError(out)
		if msg == "" {
			msg = tail(out, 10)
		}
		return "", fmt.Errorf("lab: kafka-clients %s: %s failed: %w\n%s", v, cmdline, err, msg)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("lab: %s succeeded but %w", cmdline, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// JavaSource is a Java program of the lab (lab/java/<name>), run from source by java.
func (p Paths) JavaSource(name string) string { return filepath.Join(p.LabDir(), "java", name) }
