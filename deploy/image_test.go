//go:build deploy

package deploy

import (
	"archive/tar"
	"crypto/x509"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// The image's files: nothing but these (no shell, no package manager).
var imageFiles = []string{
	"etc/group",
	"etc/passwd",
	"etc/ssl/certs/ca-certificates.crt",
	"usr/bin/kop-offsets",
}

// openImage opens the one image of the OCI layout at $KOP_OFFSETS_IMAGE_LAYOUT (written by
// scripts/image-check.sh from goreleaser's snapshot).
func openImage(t *testing.T) v1.Image {
	t.Helper()
	dir := os.Getenv("KOP_OFFSETS_IMAGE_LAYOUT")
	if dir == "" {
		t.Fatal("KOP_OFFSETS_IMAGE_LAYOUT is not set: run make image-check")
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("%s holds %d manifests, want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// files reads the image's flattened filesystem: regular files' contents by path, and the
// paths of everything else (directories, links).
func files(t *testing.T, img v1.Image) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	content, headers := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		headers[name] = h
		if h.Typeflag == tar.TypeReg {
			if content[name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return content, headers
}

func TestImageConfig(t *testing.T) {
	cf, err := openImage(t).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s, want linux/amd64", cf.OS, cf.Architecture)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/bin/kop-offsets"}) {
		t.Errorf("entrypoint %q, want [/usr/bin/kop-offsets]", c.Entrypoint)
	}
	if !slices.Equal(c.Cmd, []string{"watch", "--listen", "0.0.0.0:9464"}) {
		t.Errorf("cmd %q, want watch --listen 0.0.0.0:9464", c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root)", c.User)
	}
	if _, ok := c.ExposedPorts["9464/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 9464/tcp", c.ExposedPorts)
	}
	if !slices.Contains(c.Env, "KOP_OFFSETS_CONFIG=/etc/kop-offsets/config.yaml") {
		t.Errorf("env %q lacks KOP_OFFSETS_CONFIG=/etc/kop-offsets/config.yaml", c.Env)
	}
	if c.Labels["org.opencontainers.image.source"] == "" || c.Labels["org.opencontainers.image.version"] == "" {
		t.Errorf("labels %v lack the OCI source and version", c.Labels)
	}
}

func TestImageFiles(t *testing.T) {
	content, headers := files(t, openImage(t))
	var got []string
	for name, h := range headers {
		if h.Typeflag != tar.TypeDir {
			got = append(got, name)
		}
	}
	if h := headers["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp is not a directory with mode 1777 (repair's lock file): %+v", h)
	}
	slices.Sort(got)
	if !slices.Equal(got, imageFiles) {
		t.Errorf("files %q, want exactly %q (no shell, nothing else)", got, imageFiles)
	}
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if _, ok := headers[sh]; ok {
			t.Errorf("the image has a shell: /%s", sh)
		}
	}
	if h := headers["usr/bin/kop-offsets"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("/usr/bin/kop-offsets is not executable: %+v", h)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(content["etc/ssl/certs/ca-certificates.crt"]) {
		t.Error("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if !strings.Contains(string(content["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", content["etc/passwd"])
	}
}

// TestImageBinary runs the image's binary on this machine (no container runtime needed):
// it is static, stamped with the snapshot's version, and answers `version`.
func TestImageBinary(t *testing.T) {
	content, _ := files(t, openImage(t))
	bin := filepath.Join(t.TempDir(), "kop-offsets")
	if err := os.WriteFile(bin, content["usr/bin/kop-offsets"], 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is not static (CGO_ENABLED=0)")
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("kop-offsets version: %v\n%s", err, out)
	}
	want := "kop-offsets version "
	if v := os.Getenv("KOP_OFFSETS_IMAGE_VERSION"); v != "" {
		want += v
	}
	if !strings.HasPrefix(string(out), want) || strings.HasPrefix(string(out), "kop-offsets version dev") {
		t.Errorf("kop-offsets version printed %q, want %q...", out, want)
	}
}
