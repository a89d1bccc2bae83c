package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// StateVersion is the format version of lab/run/state.json.
const StateVersion = 1

// State is lab/run/state.json: what the lab started, so that another process (a second test
// package, kop-lab status/down) can reuse or stop it by pid.
type State struct {
	Version       int       `json:"version"`
	PulsarVersion string    `json:"pulsarVersion"`
	KoP           KoPStatus `json:"kop"`
	Keep          bool      `json:"keep"` // false: started by tests, stopped after the run
	// Owner is the `go test` process whose run started (or adopted) a lab that is not kept;
	// a reaper stops the lab once that process has exited. OwnerStart is its start time in
	// clock ticks (/proc/<pid>/stat field 22), so that a recycled pid is not mistaken for it.
	Owner      int       `json:"owner,omitempty"`
	OwnerStart string    `json:"ownerStart,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	// Shape is what was asked for; a running lab is reused only for the same shape.
	Shape    Shape          `json:"shape"`
	Clusters []ClusterState `json:"clusters"`

	// Auth is the lab's auth mode; a state file written before auth modes existed has none.
	Auth AuthMode `json:"auth,omitempty"`
	// Tenants are the extra tenants the last Up prepared (tenant1..tenantN), none for the lab
	// of tenant public only.
	Tenants []string `json:"tenants,omitempty"`
}

// ClusterState is one started cluster. PID, ConfPath and LogPath are its standalone's, or
// broker 0's in a multi-broker cluster; Processes lists every JVM (the standalone alone, or
// ZooKeeper, bookie and brokers).
type ClusterState struct {
	Cluster
	Processes    []ProcessState `json:"processes"`
	PID          int            `json:"pid"`
	StartedAt    time.Time      `json:"startedAt"`
	ReadySeconds float64        `json:"readySeconds"` // JVM start to healthy
	ConfPath     string         `json:"confPath"`
	LogPath      string         `json:"logPath"`
}

// ReadState reads the state file; a missing file gives (nil, nil).
func ReadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", path, err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("lab: %s: state version %d, want %d", path, s.Version, StateVersion)
	}
	// A state written before the lab had several layouts: two standalones, one JVM each.
	for i := range s.Clusters {
		c := &s.Clusters[i]
		if len(c.Processes) == 0 && c.PID != 0 {
			c.Processes = []ProcessState{{Role: RoleStandalone, PID: c.PID, StartedAt: c.StartedAt,
				ReadySeconds: c.ReadySeconds, ConfPath: c.ConfPath, LogPath: c.LogPath, Ports: c.AllPorts()}}
		}
	}
	if s.Shape == (Shape{}) {
		s.Shape = ShapeOf(s.ClusterList())
	}
	return &s, nil
}

// WriteState writes the state file atomically.
func WriteState(path string, s *State) error {
	s.Version = StateVersion
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Cluster returns the state of the named cluster.
func (s *State) Cluster(name string) (ClusterState, bool) {
	for _, c := range s.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return ClusterState{}, false
}

// AuthMode is the running lab's auth mode (none when the state does not say).
func (s *State) AuthMode() AuthMode {
	if s.Auth == "" {
		return AuthNone
	}
	return s.Auth
}

// Process returns the process of cluster name with role and index.
func (s *State) Process(name string, role Role, index int) (*ProcessState, bool) {
	for i := range s.Clusters {
		if s.Clusters[i].Name != name {
			continue
		}
		for j := range s.Clusters[i].Processes {
			if ps := &s.Clusters[i].Processes[j]; ps.Role == role && ps.Index == index {
				return ps, true
			}
		}
	}
	return nil, false
}

// ClusterList returns the clusters of the state.
func (s *State) ClusterList() []Cluster {
	cs := make([]Cluster, len(s.Clusters))
	for i, c := range s.Clusters {
		cs[i] = c.Cluster
	}
	return cs
}

// CurrentClusters returns the running lab's clusters (from lab/run/state.json), else the
// clusters Up would start with opts.
func CurrentClusters(opts Options) ([]Cluster, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	st, err := ReadState(Paths{Root: o.Root}.StateFile())
	if err != nil || st == nil {
		return o.Clusters, err
	}
	return st.ClusterList(), nil
}
