// Command kop-lab starts, inspects and stops the project's lab: two geo-replicated Apache
// Pulsar standalone clusters (scus, wus) on 127.0.0.1, with KoP when it can be resolved.
//
//	kop-lab up [--fresh] [--kop-nar FILE] [--auth none|token]
//	                       start (or reuse) the lab and leave it running; --kop-nar (or
//	                       KOP_NAR) loads that KoP protocol handler NAR; --auth token (or
//	                       KOP_LAB_AUTH=token) turns on token auth, TLS and KoP's SASL/PLAIN
//	kop-lab down           stop the lab's JVMs by pid
//	kop-lab clean          down, then delete the clusters' data, logs and config.yaml
//	kop-lab status         pid, RSS, ports, health and KoP of each cluster
//	kop-lab config-path    print the path of lab/run/config.yaml (for kop-offsets --config)
//	kop-lab commit --cluster scus --group G --topic topic-1 --offset 500
//	                       commit one offset: through KoP when the lab runs it, else written
//	                       in KoP's format into the cluster's offsets topic (--via pulsar)
//	kop-lab produce --cluster scus --topic topic-1 --count 10900   (KoP only)
//	kop-lab consume --cluster wus --group G --topic topic-1        (KoP only; no commit)
//	kop-lab refresh --cluster wus --group G   make KoP load the group's offsets partition afresh
//	kop-lab capture [--out FILE]
//	                       make the running KoP write group, transactional and deletion records
//	                       and save them as decoder test data (internal/offsets/testdata)
//	kop-lab load [--cluster scus] [--via pulsar|kafka] [--groups 10000] [--commits 1000000] ...
//	                       fill a lab cluster's offsets topic with many groups (make bench-lab)
//
// Environment: KOP_NAR (a KoP NAR to load), PULSAR_VERSION (default 4.0.8),
// KOP=off|auto|required (default auto), KOP_VERSION and KOP_PROBE=1 (the Maven probe for KoP,
// used without KOP_NAR), KOP_LAB_START_TIMEOUT (per cluster, default 4m), KOP_LAB_ROOT
// (repository root).
package main

import (
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
	return errors.New("usage: kop-lab up [--fresh] [--kop-nar FILE] [--auth none|token] | down | clean | status | config-path | commit --cluster C --group G --topic T --offset N [--via kop|pulsar] | produce | consume | refresh | load [flags] | capture [--out FILE]")
}

func run(args []string) error {
	if len(args) == 0 {
		return usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "up":
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		fresh := fs.Bool("fresh", false, "wipe the clusters' data directories before starting")
		nar := fs.String("kop-nar", "", "KoP protocol handler NAR to load (default $KOP_NAR)")
		authFlag := fs.String("auth", "", "auth mode: none or token (default $KOP_LAB_AUTH, else none)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var auth lab.AuthMode
		if *authFlag != "" {
			m, err := lab.ParseAuthMode(*authFlag)
			if err != nil {
				return err
			}
			auth = m
		}
		t := time.Now()
		l, err := lab.Up(ctx, lab.Options{Keep: true, Fresh: *fresh, KoPNar: *nar, Auth: auth})
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
		for _, c := range l.Clusters {
			cs, _ := l.State.Cluster(c.Name)
			cc := c.Config()
			fmt.Printf("  %-5s pid %-7d admin %s  service %s  kafka %s  ready %.1fs\n", c.Name, cs.PID, cc.AdminURL, cc.ServiceURL, c.KafkaBootstrap, cs.ReadySeconds)
		}
		fmt.Printf("  config: %s\n", l.ConfigPath)
		return nil
	case "down":
		return lab.Down(ctx, lab.Options{})
	case "clean":
		return lab.Clean(ctx, lab.Options{})
	case "status":
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
		return nil
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
	for _, c := range r.Clusters {
		health := "healthy"
		if c.Health != nil {
			health = "NOT healthy: " + strings.ReplaceAll(c.Health.Error(), "\n", " ")
		}
		pid := "-"
		if c.PID != 0 {
			pid = fmt.Sprint(c.PID)
		}
		fmt.Printf("%-5s pid %-7s rss %6.0f MB  web %d  broker %d  bookie %d  kafka %d  KoP %s  %s\n",
			c.Name, pid, c.RSSMB, c.Ports.Web, c.Ports.Broker, c.Ports.Bookie, c.Ports.Kafka, onOff(c.KoP), health)
	}
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
		if a := c.Auth; a != nil {
			fmt.Printf("  %-5s admin %s  service %s  kafka SASL_PLAINTEXT (PLAIN, token)\n", c.Name, a.AdminURLTLS, a.ServiceURLTLS)
		}
	}
	if len(r.Clusters) > 0 && r.Clusters[0].Auth != nil {
		f := r.Clusters[0].Auth.Files
		fmt.Printf("  superuser %s token %s; no-permission %s token %s; CA %s\n", lab.SuperuserRole, f.SuperuserToken, lab.UserRole, f.UserToken, f.CACert)
	}
}
