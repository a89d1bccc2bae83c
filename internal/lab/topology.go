package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Starting and stopping a multi-broker cluster (Shape.Brokers >= 2): its ZooKeeper first, then
// the cluster's metadata written once, then its bookie, then its brokers; stopped the other way
// round, since a broker whose ZooKeeper is gone hangs in its shutdown.

// serviceWait is how long a ZooKeeper or a bookie may take to listen.
const serviceWait = 2 * time.Minute

// recorder appends started processes to the state file as they start, so that a start that
// fails half-way can still be stopped by pid (kop-lab down).
type recorder struct {
	mu   sync.Mutex
	p    Paths
	st   *State
	log  io.Writer
	errs []error
}

func (r *recorder) add(cluster string, ps ProcessState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.st.Clusters {
		if r.st.Clusters[i].Name == cluster {
			r.st.Clusters[i].Processes = append(r.st.Clusters[i].Processes, ps)
			if ps.servesBroker() && ps.Index == 0 {
				r.st.Clusters[i].PID, r.st.Clusters[i].StartedAt = ps.PID, ps.StartedAt
				r.st.Clusters[i].ConfPath, r.st.Clusters[i].LogPath = ps.ConfPath, ps.LogPath
			}
		}
	}
	if err := WriteState(r.p.StateFile(), r.st); err != nil {
		r.errs = append(r.errs, err)
	}
}

// startMultiCluster starts the processes of multi-broker cluster c, without waiting for the
// brokers to be healthy (awaitHealthy does).
func startMultiCluster(ctx context.Context, o Options, p Paths, c Cluster, rec *recorder) error {
	zk, err := startProcess(p, c, RoleZooKeeper, 0, o.PulsarVersion, rec)
	if err != nil {
		return err
	}
	if err := waitListening(ctx, p, c, zk, c.Ports.ZooKeeper); err != nil {
		return err
	}
	if err := setupMetadata(ctx, p, c, o.PulsarVersion, o.Log); err != nil {
		return err
	}
	bk, err := startProcess(p, c, RoleBookie, 0, o.PulsarVersion, rec)
	if err != nil {
		return err
	}
	if err := waitListening(ctx, p, c, bk, c.Ports.Bookie); err != nil {
		return err
	}
	b0, err := startProcess(p, c, RoleBroker, 0, o.PulsarVersion, rec)
	if err != nil {
		return err
	}
	if c.KoP && len(c.Brokers) > 1 {
		// KoP creates public/__kafka and the offsets topic when its broker starts. Brokers of a
		// fresh cluster started at once race there: one gets 409 for the namespace, then 404 for
		// the topic the other is still creating, and its broker exits (seen on KoP 3.1.1.1). So
		// broker 0 goes first, and the others start once its KoP answers.
		if _, err := waitHealthy(ctx, b0.LogPath, c.Broker(0), b0.PID, o.StartTimeout); err != nil {
			return err
		}
		fmt.Fprintf(o.Log, "lab: %s broker-0 healthy (KoP created its metadata); starting the other brokers\n", c.Name)
	}
	for i := 1; i < len(c.Brokers); i++ {
		if _, err := startProcess(p, c, RoleBroker, i, o.PulsarVersion, rec); err != nil {
			return err
		}
	}
	return nil
}

// startProcess starts one process of multi-broker cluster c and records it.
func startProcess(p Paths, c Cluster, role Role, i int, pulsarVersion string, rec *recorder) (ProcessState, error) {
	id := processID(role, i)
	for _, d := range []string{p.ProcessTmp(c.Name, id), p.ProcessData(c.Name, id)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return ProcessState{}, err
		}
	}
	ps := ProcessState{Role: role, Index: i, Ports: processPorts(c, role, i),
		ConfPath: p.ProcessConf(c.Name, id), LogPath: p.ProcessLog(c.Name, id)}
	pid, err := startJava(p.ClusterDir(c.Name), ps.LogPath, c.Name+" "+id, ProcessArgs(p, c, role, i, pulsarVersion))
	if err != nil {
		return ps, err
	}
	ps.PID, ps.StartedAt = pid, time.Now().UTC()
	fmt.Fprintf(rec.log, "lab: started %s %s (pid %d): ports %v; log %s\n", c.Name, id, pid, ps.Ports, ps.LogPath)
	rec.add(c.Name, ps)
	return ps, nil
}

// processPorts lists the ports process role/i of c listens on.
func processPorts(c Cluster, role Role, i int) []int {
	switch role {
	case RoleZooKeeper:
		return []int{c.Ports.ZooKeeper}
	case RoleBookie:
		return []int{c.Ports.Bookie}
	case RoleStandalone:
		return c.AllPorts()
	}
	b := c.Broker(i)
	return append([]int{b.Ports.Web, b.Ports.Broker, b.Ports.Kafka}, authPorts(b)...)
}

// waitListening waits until process ps of c accepts connections on port.
func waitListening(ctx context.Context, p Paths, c Cluster, ps ProcessState, port int) error {
	deadline := time.Now().Add(serviceWait)
	for !portInUse(port) {
		if !isLabProcess(ps.PID, c.Name, ps.ID()) {
			return fmt.Errorf("lab: %s %s (pid %d) exited during start-up; last 40 lines of %s:\n%s",
				c.Name, ps.ID(), ps.PID, ps.LogPath, LogTail(ps.LogPath, 40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lab: %s %s (pid %d) does not listen on %d after %s; last 40 lines of %s:\n%s",
				c.Name, ps.ID(), ps.PID, port, serviceWait, ps.LogPath, LogTail(ps.LogPath, 40))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return nil
}

// setupMetadata runs PulsarClusterMetadataSetup against c's ZooKeeper unless its data was
// already set up (MetadataMarker).
func setupMetadata(ctx context.Context, p Paths, c Cluster, pulsarVersion string, log io.Writer) error {
	if _, err := os.Stat(p.MetadataMarker(c.Name)); err == nil {
		return nil
	}
	logPath := p.ProcessLog(c.Name, "metadata-setup")
	if err := os.MkdirAll(p.ProcessTmp(c.Name, "metadata-setup"), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	t := time.Now()
	cctx, cancel := context.WithTimeout(ctx, serviceWait)
	defer cancel()
	args := MetadataSetupArgs(p, c, pulsarVersion)
	fmt.Fprintf(logf, "\n=== kop-lab: %s %s\n", javaBinary(), strings.Join(args, " "))
	cmd := exec.CommandContext(cctx, javaBinary(), args...)
	cmd.Dir = p.ClusterDir(c.Name)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("lab: %s: PulsarClusterMetadataSetup: %w; last 40 lines of %s:\n%s", c.Name, err, logPath, LogTail(logPath, 40))
	}
	fmt.Fprintf(log, "lab: %s: cluster metadata written in %s (log %s)\n", c.Name, time.Since(t).Round(100*time.Millisecond), logPath)
	return os.WriteFile(p.MetadataMarker(c.Name), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

// stopCluster stops the processes of one cluster by pid: brokers (and standalones) at once,
// then the bookie, then ZooKeeper.
func stopCluster(ctx context.Context, cs ClusterState, log io.Writer) error {
	var errs []error
	for _, phase := range [][]Role{{RoleBroker, RoleStandalone}, {RoleBookie}, {RoleZooKeeper}} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, ps := range cs.Processes {
			if !containsRole(phase, ps.Role) || !IsLabJVM(ps.PID, cs.Name) {
				continue
			}
			wg.Go(func() {
				t := time.Now()
				err := stopJVM(ctx, ps.PID, cs.Name, 30*time.Second)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				fmt.Fprintf(log, "lab: stopped %s %s (pid %d) in %s\n", cs.Name, ps.ID(), ps.PID, time.Since(t).Round(100*time.Millisecond))
			})
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

func containsRole(rs []Role, r Role) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}
