package lab

import (
	"fmt"
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
