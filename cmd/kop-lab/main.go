// Command kop-lab starts, inspects and stops the project's lab: geo-replicated Apache Pulsar
// clusters (scus, wus, and eus with --clusters 3) on 127.0.0.1, each a standalone or (with
// --brokers N) a ZooKeeper, a bookie and N brokers, with KoP when it can be resolved.
//
//	kop-lab up [--fresh] [--kop-nar FILE] [--brokers N] [--clusters 2|3] [--auth none|token] [--tenants N]
//	                       start (or reuse) the lab and leave it running; --kop-nar (or
//	                       KOP_NAR) loads that KoP protocol handler NAR; --brokers (or
//	                       KOP_LAB_BROKERS, default 1 = standalone) and --clusters (or
//	                       KOP_LAB_CLUSTERS, default 2) pick the shape; a running lab of
//	                       another shape is restarted; --auth token (or KOP_LAB_AUTH=token)
//	                       turns on token auth, TLS and KoP's SASL/PLAIN, on every shape
//	                       (with --brokers N each broker has its own TLS ports); --tenants N
//	                       (or KOP_LAB_TENANTS, needs --auth token) adds tenants tenant1..tenantN
//	                       for KoP's multi-tenant metadata, each with its own token, and lists
//	                       them in config.yaml (docs/lab.md, "Tenants")
//	kop-lab down           stop the lab's JVMs by pid
//	kop-lab clean          down, then delete the clusters' data, logs and config.yaml
//	kop-lab status         every process (role, pid, RSS, ports), health and KoP of each cluster,
//	                       and whether the lab topics' replicators connect (exit 1 when not)
//	kop-lab stop-broker --cluster scus --broker 1
//	kop-lab start-broker --cluster scus --broker 1
//	                       stop one broker of a multi-broker cluster by pid, or start it again
//	                       (and wait until it is healthy); a standalone's broker 0 is the
//	                       whole cluster
//	kop-lab config-path    print the path of lab/run/config.yaml (for kop-offsets --config)
//	kop-lab commit --cluster scus --group G --topic topic-1 --offset 500 [--tenant T]
//	                       commit one offset: through KoP when the lab runs it, else written
//	                       in KoP's format into the cluster's offsets topic (--via pulsar);
//	                       --tenant T: as tenant T (its token; T's offsets topic, T/default)
//	kop-lab produce --cluster scus --topic topic-1 --count 10900 [--tenant T]  (KoP only)
//	kop-lab consume --cluster wus --group G --topic topic-1 [--tenant T]       (KoP only; no commit)
//	kop-lab refresh --cluster wus --group G [--tenant T]
//	                       make KoP load the group's offsets partition (T's) afresh
//	kop-lab capture [--out FILE]
//	                       make the running KoP write group, transactional and deletion records
//	                       and save them as decoder test data (internal/offsetlog/testdata)
//	kop-lab load [--cluster scus] [--via pulsar|kafka] [--groups 10000] [--commits 1000000] [--tenant T] ...
//	                       fill a lab cluster's offsets topic with many groups (make bench-lab)
//
// Environment: KOP_NAR (a KoP NAR to load), PULSAR_VERSION (default 4.0.8; 2.10.x, 3.0.x and
// 4.0.x are proven, each with its line's flags and settings),
// KOP=off|auto|required (default auto), KOP_VERSION and KOP_PROBE=1 (the Maven probe for KoP,
// used without KOP_NAR), KOP_LAB_BROKERS, KOP_LAB_CLUSTERS, KOP_LAB_AUTH, KOP_LAB_TENANTS, KOP_LAB_START_TIMEOUT (per
// cluster or broker, default 4m; 10m with several brokers), KOP_LAB_PORT_OFFSET, KOP_LAB_ROOT
// (repository root).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kop-lab:", err)
		if errors.Is(err, lab.ErrKoPRequired) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

func usage() error {
	return errors.New("usage: kop-lab up [--fresh] [--kop-nar FILE] [--brokers N] [--clusters 2|3] [--auth none|token] [--tenants N] | stop-broker|start-broker --cluster C --broker I | down | clean | status | config-path | commit --cluster C --group G --topic T --offset N [--via kop|pulsar] [--tenant T] | produce [--tenant T] | consume [--tenant T] | refresh [--tenant T] | load [flags] [--tenant T] | capture [--out FILE]")
}

func run(args []string) error {
	if len(args) == 0 {
		return usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "up":
		return up(ctx, args[1:])
	case "down":
		return lab.Down(ctx, lab.Options{})
	case "clean":
		return lab.Clean(ctx, lab.Options{})
	case "status":
		return status(ctx)
	case "stop-broker", "start-broker":
		return brokerCtl(ctx, args[0], args[1:])
	case "commit":
		return commit(ctx, args[1:])
	case "produce":
		return produce(ctx, args[1:])
	case "consume":
		return consume(ctx, args[1:])
	case "refresh":
		return refresh(ctx, args[1:])
	case "capture":
		return capture(ctx, args[1:])
	case "load":
		return load(ctx, args[1:])
	case "config-path":
		root, err := lab.FindRoot()
		if err != nil {
			return err
		}
		fmt.Println(lab.Paths{Root: root}.ConfigYAML())
		return nil
	}
	return usage()
}

// up starts the lab (or reuses the running one) and prints what it started.
func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fresh := fs.Bool("fresh", false, "wipe the clusters' data directories before starting")
	nar := fs.String("kop-nar", "", "KoP protocol handler NAR to load (default $KOP_NAR)")
	brokers := fs.Int("brokers", 0, "brokers per cluster: 1 = one standalone JVM, N >= 2 = ZooKeeper + bookie + N brokers (default $KOP_LAB_BROKERS, else 1)")
	clusters := fs.Int("clusters", 0, "clusters: 2 (scus, wus) or 3 (+ eus) (default $KOP_LAB_CLUSTERS, else 2)")
	authFlag := fs.String("auth", "", "auth mode: none or token (default $KOP_LAB_AUTH, else none)")
	tenantsFlag := fs.String("tenants", "", "extra tenants tenant1..tenantN for KoP's multi-tenant metadata, each with its own token; needs --auth token (default $KOP_LAB_TENANTS, else none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o, err := upOptions(*authFlag, *tenantsFlag)
	if err != nil {
		return err
	}
	o.Keep, o.Fresh, o.KoPNar, o.Shape = true, *fresh, *nar, lab.Shape{Clusters: *clusters, Brokers: *brokers}
	t := time.Now()
	l, err := lab.Up(ctx, o)
	if err != nil {
		return err
	}
	verb := "reused running lab"
	if l.Started {
		verb = "started lab"
	}
	fmt.Printf("%s in %s (Pulsar %s; auth %s; KoP %s: %s)\n", verb, time.Since(t).Round(100*time.Millisecond), l.State.PulsarVersion, l.Auth, onOff(l.KoP.Enabled), l.KoP.Reason)
	if l.Timings.MavenRan {
		fmt.Printf("  mvn (distribution): %s\n", l.Timings.Maven.Round(100*time.Millisecond))
	}
	fmt.Printf("  shape: %s\n", l.State.Shape)
	for _, c := range l.Clusters {
		cs, _ := l.State.Cluster(c.Name)
		if c.Standalone() {
			cc := c.Config()
			fmt.Printf("  %-5s pid %-7d admin %s  service %s  kafka %s  ready %.1fs\n", c.Name, cs.PID, cc.AdminURL, cc.ServiceURL, c.KafkaBootstrap, cs.ReadySeconds)
			continue
		}
		fmt.Printf("  %-5s ready %.1fs (first process started to last broker healthy)\n", c.Name, cs.ReadySeconds)
		for _, ps := range cs.Processes {
			fmt.Printf("    %-10s pid %-7d ports %v  ready %.1fs\n", ps.ID(), ps.PID, ps.Ports, ps.ReadySeconds)
		}
	}
	printTenants(l.State.Tenants, l.Clusters)
	fmt.Printf("  config: %s\n", l.ConfigPath)
	return nil
}

// upOptions parses up's --auth and --tenants. Tenants without token auth (from --auth, else
// $KOP_LAB_AUTH) is an error before anything starts; lab.Up checks $KOP_LAB_TENANTS alike.
func upOptions(auth, tenants string) (lab.Options, error) {
	var o lab.Options
	m, err := lab.ParseAuthMode(cmp.Or(auth, os.Getenv("KOP_LAB_AUTH")))
	if err != nil {
		return o, err
	}
	if auth != "" {
		o.Auth = m
	}
	if o.Tenants, err = lab.ParseTenantCount(tenants); err != nil {
		return o, err
	}
	return o, lab.CheckTenants(o.Tenants, m)
}

// printTenants lists the lab's extra tenants and their token files.
func printTenants(tenants []string, cs []lab.Cluster) {
	if len(tenants) == 0 || len(cs) == 0 || cs[0].Auth == nil {
		return
	}
	fmt.Printf("  tenants (kafkaEnableMultiTenantMetadata; SASL username = tenant):\n")
	for _, t := range tenants {
		f := lab.TenantFilesOf(cs[0].Auth.Files, t)
		fmt.Printf("    %-9s role %-16s data %-18s offsets %s  token %s\n", t, lab.TenantRole(t), lab.TenantDefaultNamespace(t), lab.TenantOffsetsTopic(t), f.Token)
	}
}

// status prints the lab's status; an unhealthy cluster makes it fail.
func status(ctx context.Context) error {
	r, err := lab.Status(ctx, lab.Options{})
	if err != nil {
		return err
	}
	printStatus(r)
	for _, c := range r.Clusters {
		if c.Health != nil {
			return errors.New("not healthy")
		}
	}
	if len(r.Replicators) > 0 {
		return errors.New("replication broken: the clusters are up but commits do not reach their peers")
	}
	return nil
}

// printReplicators says whether the lab topics' replicators reach their peers, and the fix
// when they do not.
func printReplicators(r *lab.StatusReport) {
	switch {
	case !r.ReplicatorsChecked:
		return
	case r.ReplicatorsErr != nil:
		fmt.Printf("replication: not read: %v\n", r.ReplicatorsErr)
	case len(r.Replicators) == 0:
		fmt.Printf("replication: every replicator of %d lab topics connected\n", len(lab.ReplicatedTopics()))
	default:
		fmt.Printf("replication: %d replicators do not reach their peer:\n", len(r.Replicators))
		for _, p := range r.Replicators {
			fmt.Printf("  %s\n", p)
		}
		fmt.Println("  (a lab restarted over data of a lab with other ports does this; start over with kop-lab up --fresh)")
	}
}

func printStatus(r *lab.StatusReport) {
	if !r.Running {
		fmt.Printf("lab not running (no %s)\n", r.StateFile)
	} else {
		keep := "kept (tests leave it running)"
		if !r.Keep {
			keep = "started by tests (the last test process stops it)"
		}
		fmt.Printf("lab running, %s; config %s\n", keep, r.ConfigPath)
	}
	fmt.Printf("Pulsar %s\n", r.PulsarVersion)
	printAuth(r)
	fmt.Printf("KoP %s (mode %s, version %s): %s\n", onOff(r.KoP.Enabled), r.KoP.Mode, r.KoP.Version, r.KoP.Reason)
	if r.KoP.Enabled {
		fmt.Printf("  nar %s (from %s %s), sha256 %s, handler %s, version from %s\n",
			r.KoP.Nar, r.KoP.Source, r.KoP.Origin, r.KoP.SHA256, r.KoP.HandlerClass, r.KoP.VersionFrom)
	}
	if r.KoP.Command != "" && !r.KoP.Enabled {
		fmt.Printf("  tried: %s\n", r.KoP.Command)
	}
	var total float64
	for _, c := range r.Clusters {
		health := "healthy"
		if c.Health != nil {
			health = "NOT healthy: " + strings.ReplaceAll(c.Health.Error(), "\n", " ")
		}
		total += c.RSSMB
		if c.Standalone() {
			pid := "-"
			if c.PID != 0 {
				pid = fmt.Sprint(c.PID)
			}
			fmt.Printf("%-5s standalone pid %-7s rss %6.0f MB  web %d  broker %d  bookie %d  kafka %d  KoP %s  %s\n",
				c.Name, pid, c.RSSMB, c.Ports.Web, c.Ports.Broker, c.Ports.Bookie, c.Ports.Kafka, onOff(c.KoP), health)
			continue
		}
		fmt.Printf("%-5s %d brokers, rss %6.0f MB, KoP %s  %s\n", c.Name, c.BrokerCount(), c.RSSMB, onOff(c.KoP), health)
		for _, ps := range c.Processes {
			state := "running"
			switch {
			case !ps.Running && ps.Stopped:
				state = "stopped (stop-broker)"
			case !ps.Running:
				state = "NOT running"
			case ps.Health != nil:
				state = "NOT healthy: " + strings.ReplaceAll(ps.Health.Error(), "\n", " ")
			case ps.Role == lab.RoleBroker:
				state = "healthy"
			}
			fmt.Printf("  %-10s pid %-7d rss %6.0f MB  ports %-19s %s\n", ps.ID(), ps.PID, ps.RSSMB, portList(ps.Role, ps.Ports), state)
		}
	}
	if r.Running {
		fmt.Printf("total rss %.0f MB\n", total)
	}
	printReplicators(r)
	if r.Running && len(r.Tenants) == 0 {
		fmt.Printf("tenants: public only\n")
	}
	var cs []lab.Cluster
	for _, c := range r.Clusters {
		cs = append(cs, c.Cluster)
	}
	printTenants(r.Tenants, cs)
}

// portList names the ports of a process: web/binary/kafka for a broker.
func portList(r lab.Role, ps []int) string {
	if r == lab.RoleBroker && len(ps) == 3 {
		return fmt.Sprintf("web %d binary %d kafka %d", ps[0], ps[1], ps[2])
	}
	return fmt.Sprint(ps)
}

// brokerCtl is stop-broker and start-broker.
func brokerCtl(ctx context.Context, verb string, args []string) error {
	fs := flag.NewFlagSet(verb, flag.ContinueOnError)
	cluster := fs.String("cluster", "", "cluster of the broker (scus, wus, eus)")
	broker := fs.Int("broker", -1, "index of the broker (0 to N-1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cluster == "" || *broker < 0 {
		return fmt.Errorf("%s: --cluster and --broker are required", verb)
	}
	if verb == "stop-broker" {
		return lab.StopBroker(ctx, lab.Options{}, *cluster, *broker)
	}
	return lab.StartBroker(ctx, lab.Options{}, *cluster, *broker)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// printAuth says the lab's auth mode and, on an auth lab, its TLS endpoints and token files.
func printAuth(r *lab.StatusReport) {
	fmt.Printf("auth %s\n", r.Auth)
	for _, c := range r.Clusters {
		if c.Auth == nil {
			continue
		}
		for i := 0; i < c.BrokerCount(); i++ {
			a, what := c.Broker(i).Auth, c.Name
			if !c.Standalone() {
				what = fmt.Sprintf("%s broker-%d", c.Name, i)
			}
			fmt.Printf("  %-5s admin %s  service %s  kafka SASL_PLAINTEXT (PLAIN, token)\n", what, a.AdminURLTLS, a.ServiceURLTLS)
		}
	}
	if len(r.Clusters) > 0 && r.Clusters[0].Auth != nil {
		f := r.Clusters[0].Auth.Files
		fmt.Printf("  superuser %s token %s; no-permission %s token %s; CA %s\n", lab.SuperuserRole, f.SuperuserToken, lab.UserRole, f.UserToken, f.CACert)
	}
}
