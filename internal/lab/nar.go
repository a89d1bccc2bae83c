package lab

import (
	"archive/zip"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// HandlerDescriptor is the file a Pulsar protocol handler NAR must carry: Pulsar's
// ProtocolHandlerUtils reads it to find the handler's name and class.
const HandlerDescriptor = "META-INF/services/pulsar-protocol-handler.yml"

// NarInfo describes a protocol handler NAR brought by the user (KOP_NAR).
type NarInfo struct {
	Path         string // absolute path of the file given
	Size         int64
	SHA256       string
	Name         string // the descriptor's name (KoP: kafka)
	HandlerClass string
	Version      string
	VersionFrom  string // where Version was read: the descriptor, the manifest, pom.properties or the file name
}

var narNameVersion = regexp.MustCompile(`^pulsar-protocol-handler-kafka-(.+)\.nar$`)

// InspectNar checks that path is a Pulsar protocol handler NAR (a zip holding
// HandlerDescriptor with a handlerClass) and reads its version and sha256. Every error names
// the file.
func InspectNar(path string) (NarInfo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return NarInfo{}, fmt.Errorf("lab: KoP NAR %s: %w", path, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("lab: KoP NAR %s: %s", abs, fmt.Sprintf(format, a...))
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return NarInfo{}, bad("%v", err)
	}
	if fi.IsDir() {
		return NarInfo{}, bad("is a directory, want the .nar file")
	}
	zr, err := zip.OpenReader(abs)
	if err != nil {
		return NarInfo{}, bad("not a zip archive (a NAR is one): %v", err)
	}
	defer func() { _ = zr.Close() }()
	info := NarInfo{Path: abs, Size: fi.Size()}
	var desc, manifest, pom []byte
	for _, f := range zr.File {
		switch {
		case f.Name == HandlerDescriptor:
			if desc, err = readZipFile(f); err != nil {
				return NarInfo{}, bad("%s: %v", HandlerDescriptor, err)
			}
		case f.Name == "META-INF/MANIFEST.MF":
			manifest, _ = readZipFile(f)
		case strings.HasPrefix(f.Name, "META-INF/maven/") && strings.HasSuffix(f.Name, "/pulsar-protocol-handler-kafka/pom.properties"):
			pom, _ = readZipFile(f)
		}
	}
	if desc == nil {
		return NarInfo{}, bad("no %s inside: not a Pulsar protocol handler", HandlerDescriptor)
	}
	var d struct {
		Name         string `yaml:"name"`
		HandlerClass string `yaml:"handlerClass"`
		Version      string `yaml:"version"`
	}
	if err := yaml.Unmarshal(desc, &d); err != nil {
		return NarInfo{}, bad("%s: %v", HandlerDescriptor, err)
	}
	if strings.TrimSpace(d.HandlerClass) == "" {
		return NarInfo{}, bad("%s names no handlerClass", HandlerDescriptor)
	}
	info.Name, info.HandlerClass = strings.TrimSpace(d.Name), strings.TrimSpace(d.HandlerClass)
	switch {
	case d.Version != "":
		info.Version, info.VersionFrom = d.Version, HandlerDescriptor
	case manifestValue(manifest, "Implementation-Version") != "":
		info.Version, info.VersionFrom = manifestValue(manifest, "Implementation-Version"), "META-INF/MANIFEST.MF Implementation-Version"
	case manifestValue(manifest, "Nar-Version") != "":
		info.Version, info.VersionFrom = manifestValue(manifest, "Nar-Version"), "META-INF/MANIFEST.MF Nar-Version"
	case manifestValue(pom, "version") != "":
		info.Version, info.VersionFrom = manifestValue(pom, "version"), "pom.properties"
	default:
		if m := narNameVersion.FindStringSubmatch(filepath.Base(abs)); m != nil {
			info.Version, info.VersionFrom = m[1], "file name"
		} else {
			info.Version, info.VersionFrom = "unknown", "nowhere (no version in the NAR or its name)"
		}
	}
	if info.SHA256, err = fileSHA256(abs); err != nil {
		return NarInfo{}, bad("%v", err)
	}
	return info, nil
}

func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(io.LimitReader(rc, 1<<20))
}

// manifestValue returns the value of key in a MANIFEST.MF ("Key: value") or a .properties
// file ("key=value"); continuation lines are not needed for the keys read here.
func manifestValue(b []byte, key string) string {
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		for _, sep := range []string{": ", "="} {
			if k, v, ok := strings.Cut(line, sep); ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(v)
			}
		}
	}
	return ""
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// installNar puts the NAR alone into the directory the brokers load handlers from
// (lab/run/protocols/byo/): Pulsar loads every *.nar of protocolHandlerDirectory, so another
// KoP left there would be loaded too. A hard link when the file system allows it, else a copy;
// a file with the same sha256 already in place is kept.
func installNar(p Paths, info NarInfo) (string, error) {
	dir := p.BYONarDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "pulsar-protocol-handler-kafka-"+safeName(info.Version)+".nar")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if filepath.Join(dir, e.Name()) == dst {
			if sum, err := fileSHA256(dst); err == nil && sum == info.SHA256 {
				return dst, nil
			}
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return "", err
		}
	}
	if err := os.Link(info.Path, dst); err == nil {
		return dst, nil
	}
	if err := copyFile(info.Path, dst); err != nil {
		_ = os.Remove(dst)
		return "", fmt.Errorf("lab: copy KoP NAR %s to %s: %w", info.Path, dst, err)
	}
	sum, err := fileSHA256(dst)
	if err != nil {
		return "", fmt.Errorf("lab: copy of KoP NAR %s at %s: %w", info.Path, dst, err)
	}
	if sum != info.SHA256 {
		return "", fmt.Errorf("lab: copy of KoP NAR %s at %s has sha256 %s, want %s", info.Path, dst, sum, info.SHA256)
	}
	return dst, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "unknown"
	}
	return s
}
