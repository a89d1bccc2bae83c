package lab

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ClusterStatus is what Status reports for one cluster. PID is its standalone's or broker
// 0's; RSSMB is the sum over its processes; Health joins every broker's.
type ClusterStatus struct {
	Cluster
	PID          int
	Running      bool // every process runs
	RSSMB        float64
	Health       error // nil when healthy
	ReadySeconds float64
	LogPath      string
	Processes    []ProcessStatus
}

// ProcessStatus is what Status reports for one JVM.
type ProcessStatus struct {
	ProcessState
	Running bool
	RSSMB   float64
	Health  error // brokers and standalones: CheckHealth through this broker
}

// StatusReport is the lab's state as Status sees it.
type StatusReport struct {
	Root       string
	StateFile  string
	ConfigPath string
	Running    bool // a state file exists
	Keep       bool
	// PulsarVersion is the running lab's, else the one the next Up would start.
	PulsarVersion string
	KoP           KoPStatus
	// Auth is the running lab's auth mode, else the one the next Up would start.
	Auth AuthMode
	// Tenants are the running lab's extra tenants (kop-lab up --tenants N), none without.
	Tenants  []string
	Clusters []ClusterStatus
	// Replicators are the lab topics' replicators that do not reach their peer
	// (CheckReplicators), read when every cluster is healthy; ReplicatorsErr says why they
	// could not be read.
	ReplicatorsChecked bool
	Replicators        []ReplicatorProblem
	ReplicatorsErr     error
}

// ReplicatorSettle is how long Status waits before it reads a missing or disconnected
// replicator again: reading a topic's stats loads it and starts its replicators.
const ReplicatorSettle = 5 * time.Second

// Status reads the state file and checks each JVM (pid, RSS, health). It takes no lock.
func Status(ctx context.Context, opts Options) (*StatusReport, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	p := Paths{Root: o.Root}
	st, err := ReadState(p.StateFile())
	if err != nil {
		return nil, err
	}
	r := &StatusReport{Root: o.Root, StateFile: p.StateFile(), ConfigPath: p.ConfigYAML(), PulsarVersion: o.PulsarVersion, Auth: o.Auth}
	if st == nil {
		for _, c := range o.Clusters {
			r.Clusters = append(r.Clusters, ClusterStatus{Cluster: c, Health: errors.New("not started")})
		}
		r.KoP = KoPStatus{Mode: o.KoP, Version: o.KoPVersion, Reason: "lab not started"}
		if o.KoPNar != "" {
			r.KoP.Source, r.KoP.Origin, r.KoP.Reason = "KOP_NAR", o.KoPNar, "lab not started; KOP_NAR="+o.KoPNar
		} else if cached, ok := readProbe(p, o.KoPVersion); ok {
			r.KoP.Reason = "KoP " + o.KoPVersion + " not resolvable from Maven: " + cached.MavenError
		}
		return r, nil
	}
	r.Running, r.Keep, r.KoP, r.PulsarVersion, r.Auth, r.Tenants = true, st.Keep, st.KoP, st.PulsarVersion, st.AuthMode(), st.Tenants
	healthy := true
	for _, c := range st.Clusters {
		cs := clusterStatus(ctx, c)
		healthy = healthy && cs.Health == nil
		r.Clusters = append(r.Clusters, cs)
	}
	if healthy {
		r.ReplicatorsChecked = true
		r.Replicators, r.ReplicatorsErr = CheckReplicators(ctx, st.ClusterList(), ReplicatorSettle)
	}
	return r, nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// clusterStatus checks each process of c: pid, RSS and, for brokers, health.
func clusterStatus(ctx context.Context, c ClusterState) ClusterStatus {
	cs := ClusterStatus{Cluster: c.Cluster, PID: c.PID, ReadySeconds: c.ReadySeconds, LogPath: c.LogPath, Running: true}
	var errs []error
	for _, ps := range c.Processes {
		st := ProcessStatus{ProcessState: ps, Running: IsLabJVM(ps.PID, c.Name)}
		switch {
		case !st.Running && ps.Stopped:
			st.Health = fmt.Errorf("%s stopped (kop-lab stop-broker)", ps.ID())
		case !st.Running:
			st.Health = fmt.Errorf("%s: pid %d is not running", ps.ID(), ps.PID)
		default:
			st.RSSMB, _ = RSSMB(ps.PID)
			if ps.servesBroker() {
				st.Health = brokerErr(c.Cluster, ps.Index, CheckHealth(ctx, c.Broker(ps.Index)))
			}
		}
		if st.Health != nil {
			errs = append(errs, st.Health)
		}
		cs.Running = cs.Running && st.Running
		cs.RSSMB += st.RSSMB
		cs.Processes = append(cs.Processes, st)
	}
	if len(c.Processes) == 0 {
		cs.Running = false
		errs = append(errs, errors.New("no process recorded"))
	}
	cs.Health = errors.Join(errs...)
	return cs
}
