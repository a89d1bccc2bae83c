package lab

import (
	"context"
	"fmt"
	"time"
)

// StopBroker stops broker i of cluster name by its pid (SIGTERM, then SIGKILL after the
// grace period) and records it as stopped, for tests of a cluster with a broker down. A
// multi-broker cluster's other processes keep running; a standalone's broker 0 is its one
// JVM (broker, bookie and metadata store): the whole cluster stops.
func StopBroker(ctx context.Context, opts Options, name string, i int) error {
	return stopBroker(ctx, opts, name, i, false)
}

// KillBroker is StopBroker with SIGKILL at once: a crashed broker, which neither unloads its
// bundles nor leaves the metadata store (its ephemeral nodes stay until the session expires).
func KillBroker(ctx context.Context, opts Options, name string, i int) error {
	return stopBroker(ctx, opts, name, i, true)
}

func stopBroker(ctx context.Context, opts Options, name string, i int, kill bool) error {
	return exclusive(ctx, opts, func(o Options, p Paths) error {
		st, ps, err := brokerProcess(p, name, i)
		if err != nil {
			return err
		}
		if ps.alive(name) {
			t := time.Now()
			how := "stopped"
			if kill {
				how = "killed"
				if err := killJVM(ctx, ps.PID, name); err != nil {
					return err
				}
			} else if err := stopJVM(ctx, ps.PID, name, 30*time.Second); err != nil {
				return err
			}
			fmt.Fprintf(o.Log, "lab: %s %s %s (pid %d) in %s\n", how, name, ps.ID(), ps.PID, time.Since(t).Round(100*time.Millisecond))
		} else {
			fmt.Fprintf(o.Log, "lab: %s %s (pid %d) was not running\n", name, ps.ID(), ps.PID)
		}
		ps.Stopped = true
		return WriteState(p.StateFile(), st)
	})
}

// StartBroker starts broker i of cluster name again (with its configuration of the first
// start) and waits until it is healthy; a broker that runs is left alone.
func StartBroker(ctx context.Context, opts Options, name string, i int) error {
	return exclusive(ctx, opts, func(o Options, p Paths) error {
		st, ps, err := brokerProcess(p, name, i)
		if err != nil {
			return err
		}
		c, _ := st.Cluster(name)
		if ps.alive(name) {
			fmt.Fprintf(o.Log, "lab: %s %s already runs (pid %d)\n", name, ps.ID(), ps.PID)
			ps.Stopped = false
			return WriteState(p.StateFile(), st)
		}
		for _, port := range ps.Ports {
			if portInUse(port) {
				return fmt.Errorf("lab: %s %s: port %d is still in use", name, ps.ID(), port)
			}
		}
		var pid int
		if ps.Role == RoleStandalone {
			pid, err = startJVM(p, c.Cluster, st.PulsarVersion)
		} else {
			pid, err = startJava(p.ClusterDir(name), ps.LogPath, name+" "+ps.ID(), ProcessArgs(p, c.Cluster, RoleBroker, i, st.PulsarVersion))
		}
		if err != nil {
			return err
		}
		ps.PID, ps.StartedAt, ps.Stopped = pid, time.Now().UTC(), false
		if i == 0 {
			for k := range st.Clusters {
				if st.Clusters[k].Name == name {
					st.Clusters[k].PID, st.Clusters[k].StartedAt = pid, ps.StartedAt
				}
			}
		}
		// The pid goes to disk before the wait: kop-lab down can stop it whatever happens.
		if err := WriteState(p.StateFile(), st); err != nil {
			return err
		}
		fmt.Fprintf(o.Log, "lab: started %s %s (pid %d); log %s\n", name, ps.ID(), pid, ps.LogPath)
		d, err := waitHealthy(ctx, ps.LogPath, c.Broker(i), pid, o.StartTimeout)
		if err != nil {
			return err
		}
		ps.ReadySeconds = d.Seconds()
		fmt.Fprintf(o.Log, "lab: %s %s healthy after %s\n", name, ps.ID(), d.Round(100*time.Millisecond))
		return WriteState(p.StateFile(), st)
	})
}

// brokerProcess finds broker i of cluster name in the running lab's state.
func brokerProcess(p Paths, name string, i int) (*State, *ProcessState, error) {
	st, err := ReadState(p.StateFile())
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		return nil, nil, fmt.Errorf("lab: not running (no %s)", p.StateFile())
	}
	c, ok := st.Cluster(name)
	if !ok {
		return nil, nil, fmt.Errorf("lab: no cluster %q in the running lab (%v)", name, ClusterNames(st.ClusterList()))
	}
	if c.Standalone() {
		if i != 0 {
			return nil, nil, fmt.Errorf("lab: %s is a standalone: its one broker is broker 0 (its broker, bookie and metadata store are one JVM); start the lab with --brokers 2 (KOP_LAB_BROKERS=2) for more", name)
		}
		ps, ok := st.Process(name, RoleStandalone, 0)
		if !ok {
			return nil, nil, fmt.Errorf("lab: %s: no standalone process in the lab's state", name)
		}
		return st, ps, nil
	}
	ps, ok := st.Process(name, RoleBroker, i)
	if !ok {
		return nil, nil, fmt.Errorf("lab: %s has no broker %d (brokers 0 to %d)", name, i, c.BrokerCount()-1)
	}
	return st, ps, nil
}

// StopBroker stops broker i of cluster name of this lab (see the package function).
func (l *Lab) StopBroker(ctx context.Context, name string, i int) error {
	return StopBroker(ctx, Options{Root: l.Paths.Root}, name, i)
}

// KillBroker kills broker i of cluster name of this lab with SIGKILL (see the package function).
func (l *Lab) KillBroker(ctx context.Context, name string, i int) error {
	return KillBroker(ctx, Options{Root: l.Paths.Root}, name, i)
}

// StartBroker starts broker i of cluster name of this lab again and waits until it is healthy.
func (l *Lab) StartBroker(ctx context.Context, name string, i int) error {
	return StartBroker(ctx, Options{Root: l.Paths.Root}, name, i)
}

// alive reports whether ps runs as the lab's JVM of cluster name: a standalone carries the
// cluster's marker only, the processes of a multi-broker cluster their own too.
func (ps *ProcessState) alive(name string) bool {
	if ps.Role == RoleStandalone {
		return IsLabJVM(ps.PID, name)
	}
	return isLabProcess(ps.PID, name, ps.ID())
}
