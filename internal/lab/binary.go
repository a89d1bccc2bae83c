package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildKopOffsets builds the kop-offsets binary into dir, for tests that run it as a
// process of its own (a pid to signal, a command line of its own).
func BuildKopOffsets(dir string) (string, error) {
	bin := filepath.Join(dir, "kop-offsets")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/kop-offsets/kop-offsets/cmd/kop-offsets").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// ConfigCopy writes the lab's config.yaml to dir/name.yaml: another operator's (or host's)
// own config file naming the same clusters.
func (l *Lab) ConfigCopy(dir, name string) (string, error) {
	b, err := os.ReadFile(l.ConfigPath)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name+".yaml")
	return p, os.WriteFile(p, b, 0o600)
}
