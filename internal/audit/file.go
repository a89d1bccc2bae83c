package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/match"
)

// EnvFile names the environment variable that sets the default of --audit-file.
const EnvFile = "KOP_OFFSETS_AUDIT_FILE"

// DefaultFileHelp is how help texts show DefaultFile (the value depends on the host).
const DefaultFileHelp = "$KOP_OFFSETS_AUDIT_FILE, else $XDG_STATE_HOME/kop-offsets/audit.jsonl, else ~/.local/state/kop-offsets/audit.jsonl"

// DefaultFile is the default trail: $KOP_OFFSETS_AUDIT_FILE, else
// $XDG_STATE_HOME/kop-offsets/audit.jsonl, else ~/.local/state/kop-offsets/audit.jsonl.
func DefaultFile(getenv func(string) string) string {
	if p := getenv(EnvFile); p != "" {
		return p
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "kop-offsets", "audit.jsonl")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "kop-offsets", "audit.jsonl")
	}
	return filepath.Join(os.TempDir(), "kop-offsets-audit.jsonl")
}

// File appends records to a JSON-lines file, opened (with its directory) on Open or the
// first Write. Several processes may append to one file: each record is one write(2) on a
// file opened with O_APPEND.
type File struct {
	Path string

	mu sync.Mutex
	fh *os.File
}

// Open opens the file for appending, creating it and its directory; a no-op once open.
// Writing commands call it before their first write, so that a trail that cannot be
// written stops them before anything is written.
func (f *File) Open() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open()
}

func (f *File) open() error {
	if f.fh != nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o750); err != nil {
		return fmt.Errorf("audit file %s: %w", f.Path, err)
	}
	fh, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("audit file %s: %w", f.Path, err)
	}
	f.fh = fh
	return nil
}

// Write implements Sink.
func (f *File) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.open(); err != nil {
		return err
	}
	_, err = f.fh.Write(append(b, '\n'))
	return err
}

// Close closes the file (a no-op when it was never opened).
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fh == nil {
		return nil
	}
	err := f.fh.Close()
	f.fh = nil
	return err
}

// Filter selects records when reading a trail back. Zero fields select everything.
type Filter struct {
	Clusters []string
	// Groups are names or globs (internal/match) matched against a record's groups and
	// requested groups.
	Groups []string
	// Tenants are names or globs matched against the tenant a record wrote to (Tenant).
	Tenants []string
	Since   time.Time
}

// Match reports whether r passes the filter.
func (f Filter) Match(r Record) bool {
	if len(f.Clusters) > 0 && !slices.Contains(f.Clusters, r.Cluster) {
		return false
	}
	if !f.Since.IsZero() && r.Time.Before(f.Since) {
		return false
	}
	if len(f.Tenants) > 0 && !match.Any(f.Tenants, r.Tenant()) {
		return false
	}
	if len(f.Groups) == 0 {
		return true
	}
	if match.Any(f.Groups, r.Groups...) || match.Any(f.Groups, r.RequestedGroups...) {
		return true
	}
	for _, o := range r.Offsets {
		if match.Any(f.Groups, o.Group) {
			return true
		}
	}
	return false
}

// ErrBadLine wraps a line of a trail that is not a record.
var ErrBadLine = errors.New("not an audit record")

// Read returns the records of a trail that pass f, in file order. A line that does not
// parse is an error naming it (a trail is written by this tool only).
func Read(r io.Reader, f Filter) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return out, fmt.Errorf("line %d: %w: %w", n, ErrBadLine, err)
		}
		if f.Match(rec) {
			out = append(out, rec)
		}
	}
	return out, sc.Err()
}

// ReadFile is Read of the trail at p; a trail that does not exist holds no records.
func ReadFile(p string, f Filter) ([]Record, error) {
	fh, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = fh.Close() }()
	return Read(fh, f)
}
