package lab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultStartTimeout is how long one standalone cluster may take to become healthy.
const DefaultStartTimeout = 4 * time.Minute

// DefaultMultiStartTimeout is how long a broker of a multi-broker cluster may take to become
// healthy: all brokers of all clusters start at once on 2 shared cores (docs/lab.md).
const DefaultMultiStartTimeout = 10 * time.Minute

// Options configure Up, Down, Status and Ensure. The zero value means: repository root found
// from the working directory, Pulsar version from $PULSAR_VERSION (default
// DefaultPulsarVersion), KoP mode from $KOP (default auto), the NAR from $KOP_NAR, KoP version
// from $KOP_VERSION (default DefaultKoPVersion, for the Maven probe), the shape from
// $KOP_LAB_CLUSTERS and $KOP_LAB_BROKERS (default DefaultShape) and its clusters (ClustersFor),
// DefaultStartTimeout (DefaultMultiStartTimeout with several brokers), logs to stderr.
type Options struct {
	Root          string
	PulsarVersion string
	KoP           KoPMode
	// KoPNar is a KoP protocol handler NAR brought by the user. It is checked, linked or
	// copied into lab/run/protocols/byo/ and loaded instead of asking Maven; with KOP=auto a
	// NAR that fails the check is an error, not a reason to carry on without KoP.
	KoPNar     string
	KoPVersion string
	// Shape is how many clusters and brokers per cluster; zero counts come from
	// KOP_LAB_CLUSTERS and KOP_LAB_BROKERS. Clusters, when set, wins over it.
	Shape        Shape
	Clusters     []Cluster
	StartTimeout time.Duration
	// Keep marks the lab as kept: tests that reuse it never stop it (kop-lab up, KOP_LAB_KEEP=1).
	Keep bool
	// Fresh wipes the clusters' data directories before starting them.
	Fresh bool
	// FreshOnStart wipes them only when a new start is needed: a running healthy lab is still
	// reused. A standalone restarted over its old RocksDB metadata can keep deleting and
	// re-creating its own bookie registration ("Not enough non-faulty bookies available"
	// minutes after it reported healthy), so tests never start over old data.
	FreshOnStart bool
	// Auth is the auth mode: none (default, $KOP_LAB_AUTH unset) or token (auth.go).
	Auth AuthMode
	// Tenants is how many extra tenants (tenant1..tenantN, each with its own token) the lab
	// prepares for KoP's multi-tenant metadata (tenants.go); 0 means $KOP_LAB_TENANTS, else
	// none: the lab of tenant public only. Needs Auth token.
	Tenants int
	Log     io.Writer
}

func (o Options) resolve() (Options, error) {
	if o.Root == "" {
		r, err := FindRoot()
		if err != nil {
			return o, err
		}
		o.Root = r
	}
	o.PulsarVersion = cmp.Or(o.PulsarVersion, os.Getenv("PULSAR_VERSION"), DefaultPulsarVersion)
	o.KoPNar = cmp.Or(o.KoPNar, os.Getenv("KOP_NAR"))
	if o.KoP == "" {
		m, err := ParseKoPMode(os.Getenv("KOP"))
		if err != nil {
			return o, err
		}
		o.KoP = m
	}
	o.KoPVersion = cmp.Or(o.KoPVersion, os.Getenv("KOP_VERSION"), DefaultKoPVersion)
	if len(o.Clusters) == 0 {
		sh, err := shapeFromEnv(o.Shape)
		if err != nil {
			return o, err
		}
		o.Shape, o.Clusters = sh, ClustersFor(sh)
	} else {
		o.Shape = ShapeOf(o.Clusters)
	}
	if o.Auth == "" {
		m, err := ParseAuthMode(os.Getenv("KOP_LAB_AUTH"))
		if err != nil {
			return o, err
		}
		o.Auth = m
	}
	line, err := LineOf(o.PulsarVersion)
	if err != nil {
		return o, err
	}
	if !o.Shape.Standalone() && !line.MultiBroker {
		return o, fmt.Errorf("lab: Pulsar %s: the multi-broker lab (--brokers %d) runs on Pulsar 2.11 and later; use standalones (--brokers 1) on the %s line", o.PulsarVersion, o.Shape.Brokers, line)
	}
	o.Clusters = withAuth(withLinePorts(o.Clusters, line), Paths{Root: o.Root}, o.Auth)
	if o.Tenants == 0 {
		n, err := ParseTenantCount(os.Getenv("KOP_LAB_TENANTS"))
		if err != nil {
			return o, err
		}
		o.Tenants = n
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
		if !o.Shape.Standalone() {
			o.StartTimeout = DefaultMultiStartTimeout
		}
		if s := os.Getenv("KOP_LAB_START_TIMEOUT"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				return o, fmt.Errorf("lab: KOP_LAB_START_TIMEOUT=%q: %w", s, err)
			}
			o.StartTimeout = d
		}
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	return o, nil
}

// Lab is a running lab.
type Lab struct {
	Paths      Paths
	Clusters   []Cluster
	KoP        KoPStatus
	Auth       AuthMode
	ConfigPath string // lab/run/config.yaml, for kop-offsets --config
	State      *State
	// Started is true when this call started the JVMs, false when it reused running ones.
	Started bool
	Timings Timings
}

// Timings measured by Up.
type Timings struct {
	Maven     time.Duration            // EnsureDist (zero when mvn was skipped)
	MavenRan  bool                     // whether mvn ran for the distribution
	Ready     map[string]time.Duration // per cluster: JVM start to healthy
	Configure time.Duration
	Total     time.Duration
}

// Cluster returns the named cluster.
func (l *Lab) Cluster(name string) Cluster {
	for _, c := range l.Clusters {
		if c.Name == name {
			return c
		}
	}
	panic("lab: no cluster " + name)
}

// Up starts the lab, or reuses it when the state file names running, healthy JVMs. It holds
// lab/run/lab.lock while doing so, so concurrent callers start it once.
func Up(ctx context.Context, opts Options) (*Lab, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	// Before anything starts or stops: a running lab stays as it is.
	if err := CheckTenants(o.Tenants, o.Auth); err != nil {
		return nil, err
	}
	p := Paths{Root: o.Root}
	lk, err := lock(ctx, p.LabLock(), syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	return up(ctx, o, p)
}

func up(ctx context.Context, o Options, p Paths) (*Lab, error) {
	t0 := time.Now()
	st, err := ReadState(p.StateFile())
	if err != nil {
		fmt.Fprintf(o.Log, "lab: ignoring state file: %v\n", err)
		st = nil
	}
	if st != nil && !o.Fresh && reusable(st, o) {
		err := allHealthy(ctx, st, 30*time.Second)
		if err == nil {
			l, err := finish(ctx, o, p, st, false)
			if err != nil {
				return nil, err
			}
			l.Timings.Total = time.Since(t0)
			return l, nil
		}
		fmt.Fprintf(o.Log, "lab: running lab is not healthy, restarting it: %v\n", err)
	}
	// Artifacts first: a failure here (no distribution, KOP=required without KoP) leaves a
	// running lab untouched.
	var tm Timings
	ms := time.Now()
	ran, err := EnsureDist(ctx, p, o.PulsarVersion, o.Log)
	if err != nil {
		return nil, err
	}
	if ran {
		tm.Maven, tm.MavenRan = time.Since(ms), true
	}
	kop, err := resolveKoP(ctx, p, o)
	if err != nil {
		return nil, err
	}
	if err := refuseOtherData(o, p); err != nil {
		return nil, err
	}
	if st != nil {
		if err := stopAll(ctx, st, o.Log); err != nil {
			return nil, err
		}
		_ = os.Remove(p.StateFile())
	}

	cs, err := prepareClusters(o, p, kop)
	if err != nil {
		return nil, err
	}
	st, err = startClusters(ctx, o, p, cs, kop)
	if err != nil {
		return nil, err
	}
	if tm.Ready, err = awaitHealthy(ctx, o, p, st); err != nil {
		return nil, err
	}
	if err := WriteState(p.StateFile(), st); err != nil {
		return nil, err
	}
	cs0 := time.Now()
	l, err := finish(ctx, o, p, st, true)
	if err != nil {
		return nil, err
	}
	tm.Configure = time.Since(cs0)
	tm.Total = time.Since(t0)
	l.Timings = tm
	return l, nil
}

// prepareClusters returns the clusters to start, with the configuration of each process
// written (and their data removed when asked, or when it was written by the other layout); it
// fails when a port is taken by another process.
func prepareClusters(o Options, p Paths, kop KoPStatus) ([]Cluster, error) {
	cs := make([]Cluster, len(o.Clusters))
	copy(cs, o.Clusters)
	if err := prepareAuth(p, o.Auth, o.Log); err != nil {
		return nil, err
	}
	for i := range cs {
		c := &cs[i]
		c.KoP = kop.Enabled
		for _, port := range c.AllPorts() {
			if portInUse(port) {
				return nil, fmt.Errorf("lab: %s: port %d on %s is already in use by a process the lab did not start (lab/run/state.json has no running lab)", c.Name, port, Host)
			}
		}
		if err := prepareData(o, p, *c); err != nil {
			return nil, err
		}
		var err error
		if c.Standalone() {
			_, err = writeBrokerConf(p, *c, o.PulsarVersion, kop)
		} else {
			err = writeClusterConfs(p, *c, o.PulsarVersion, kop)
		}
		if err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// prepareData wipes c's data when asked (Fresh, FreshOnStart) or when the other layout wrote
// it (a standalone's RocksDB store means nothing to ZooKeeper, and the reverse), and records
// the layout and the stamp (refuseOtherData has checked the one it found).
func prepareData(o Options, p Paths, c Cluster) error {
	layout := "zookeeper"
	if c.Standalone() {
		layout = "standalone"
	}
	old, other := otherLayout(p, c)
	if o.Fresh || o.FreshOnStart || other {
		if other {
			fmt.Fprintf(o.Log, "lab: %s: wiping data written by the %s layout\n", c.Name, old)
		}
		if err := os.RemoveAll(p.DataDir(c.Name)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(p.DataDir(c.Name), 0o755); err != nil {
		return err
	}
	if err := writeStamp(p, c.Name, newStamp(o)); err != nil {
		return err
	}
	return os.WriteFile(p.LayoutMarker(c.Name), []byte(layout+"\n"), 0o644)
}

// otherLayout returns the layout that wrote c's data and whether it is not c's.
func otherLayout(p Paths, c Cluster) (string, bool) {
	b, err := os.ReadFile(p.LayoutMarker(c.Name))
	old := strings.TrimSpace(string(b))
	if _, serr := os.Stat(p.DataDir(c.Name)); errors.Is(err, os.ErrNotExist) && serr == nil {
		old = "standalone" // data of a lab from before the marker
	}
	layout := "zookeeper"
	if c.Standalone() {
		layout = "standalone"
	}
	return old, old != "" && old != layout
}

// refuseOtherData fails, before anything is stopped, when a cluster's data that the start
// would reuse was made by a lab of another Pulsar version, auth mode or ports (stamp.go).
func refuseOtherData(o Options, p Paths) error {
	if o.Fresh || o.FreshOnStart {
		return nil
	}
	want := newStamp(o)
	for _, c := range o.Clusters {
		if _, other := otherLayout(p, c); other {
			continue // wiped by prepareData
		}
		if err := checkStamp(p, c.Name, want); err != nil {
			return err
		}
	}
	return nil
}

// startClusters starts every cluster's JVMs and records their pids in the state file as they
// start: a start that fails half-way can still be stopped by kop-lab down.
func startClusters(ctx context.Context, o Options, p Paths, cs []Cluster, kop KoPStatus) (*State, error) {
	st := &State{PulsarVersion: o.PulsarVersion, KoP: kop, Keep: o.Keep, StartedAt: time.Now().UTC(), Shape: ShapeOf(cs), Auth: o.Auth}
	for _, c := range cs {
		st.Clusters = append(st.Clusters, ClusterState{Cluster: c})
	}
	rec := &recorder{p: p, st: st, log: o.Log}
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		if c.Standalone() {
			pid, err := startJVM(p, c, o.PulsarVersion)
			if err != nil {
				errs[i] = err
				continue
			}
			fmt.Fprintf(o.Log, "lab: started %s (pid %d): web %d, broker %d, bookie %d, kafka %d (KoP %s)%s; log %s\n",
				c.Name, pid, c.Ports.Web, c.Ports.Broker, c.Ports.Bookie, c.Ports.Kafka, onOff(c.KoP), authSummary(c), p.LogFile(c.Name))
			rec.add(c.Name, ProcessState{Role: RoleStandalone, PID: pid, Ports: c.AllPorts(), StartedAt: time.Now().UTC(),
				ConfPath: p.BrokerConf(c.Name), LogPath: p.LogFile(c.Name)})
			continue
		}
		wg.Go(func() {
			errs[i] = startMultiCluster(ctx, o, p, c, rec)
		})
	}
	wg.Wait()
	if err := errors.Join(append(errs, rec.errs...)...); err != nil {
		_ = stopAll(context.WithoutCancel(ctx), st, o.Log)
		_ = os.Remove(p.StateFile())
		return nil, err
	}
	return st, nil
}

// awaitHealthy waits for every broker (or standalone) of every cluster to be healthy and
// returns how long each cluster took from its start (its slowest broker); when one is not, it
// stops them all.
func awaitHealthy(ctx context.Context, o Options, p Paths, st *State) (map[string]time.Duration, error) {
	ready := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for i := range st.Clusters {
		cs := &st.Clusters[i]
		for j := range cs.Processes {
			ps := &cs.Processes[j]
			if !ps.servesBroker() {
				continue
			}
			wg.Go(func() {
				view := cs.Broker(ps.Index)
				_, err := waitHealthy(ctx, ps.LogPath, view, ps.PID, o.StartTimeout)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				d := time.Since(cs.StartedAt)
				if first := cs.Processes[0].StartedAt; !first.IsZero() {
					d = time.Since(first)
				}
				ps.ReadySeconds = time.Since(ps.StartedAt).Seconds()
				if d > ready[cs.Name] {
					ready[cs.Name] = d
					cs.ReadySeconds = d.Seconds()
				}
				what := cs.Name
				if !cs.Standalone() {
					what += " " + ps.ID()
				}
				fmt.Fprintf(o.Log, "lab: %s healthy after %s\n", what, time.Duration(ps.ReadySeconds*float64(time.Second)).Round(100*time.Millisecond))
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = stopAll(context.WithoutCancel(ctx), st, o.Log)
		_ = os.Remove(p.StateFile())
		return nil, err
	}
	return ready, nil
}

// finish configures geo-replication, writes config.yaml and the state, and builds the Lab.
func finish(ctx context.Context, o Options, p Paths, st *State, started bool) (*Lab, error) {
	cs := make([]Cluster, len(st.Clusters))
	for i, c := range st.Clusters {
		cs[i] = c.Cluster
	}
	if err := Configure(ctx, cs, o.Log); err != nil {
		return nil, err
	}
	// Tenants are admin-API state only (no broker setting), so a running lab is reused
	// whatever its tenants and takes the ones asked for now; config.yaml lists those.
	st.Tenants = TenantNames(o.Tenants)
	if err := ConfigureTenants(ctx, cs, st.Tenants, st.KoP.Enabled); err != nil {
		return nil, err
	}
	y, err := RenderCLIConfig(cs, st.PulsarVersion, st.KoP, st.Tenants...)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.ConfigYAML(), y, 0o644); err != nil {
		return nil, err
	}
	if o.Keep && !st.Keep {
		st.Keep = true
	}
	if err := WriteState(p.StateFile(), st); err != nil {
		return nil, err
	}
	return &Lab{Paths: p, Clusters: cs, KoP: st.KoP, Auth: st.AuthMode(), ConfigPath: p.ConfigYAML(), State: st, Started: started}, nil
}

// allHealthy waits up to wait for every broker of every cluster to be healthy.
func allHealthy(ctx context.Context, st *State, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var errs []error
		for _, c := range st.Clusters {
			for i := 0; i < c.BrokerCount(); i++ {
				if err := CheckHealth(ctx, c.Broker(i)); err != nil {
					errs = append(errs, brokerErr(c.Cluster, i, err))
				}
			}
		}
		err := errors.Join(errs...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// brokerErr names broker i in err when c has several brokers.
func brokerErr(c Cluster, i int, err error) error {
	if err == nil || c.Standalone() {
		return err
	}
	return fmt.Errorf("broker-%d (%s): %w", i, c.Broker(i).AdminURL, err)
}
