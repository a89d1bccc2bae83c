package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/kop-offsets/kop-offsets/internal/lab"
)

type runConfig struct {
	root, kopLab, kopOffsets, self, config string
	sizes                                  []int
	keys, rounds, topics, runs             int
	memberGroups                           int
	keep, both, cached                     bool
	via                                    string
	out                                    io.Writer
	log                                    io.Writer
}

// sizeResult is what one size measured.
type sizeResult struct {
	groups, keys int
	pairs        []*pair
}

// pair is one line of a table: our command beside its reference, measured alternately.
type pair struct {
	work, refName string
	ours, ref     Cmd
	kop           bool
	ourStat       Stat
	refStat       Stat
	ourErr        error
	refErr        error
	liveKeys      int
}

func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	sizes := fs.String("sizes", "2000,10000", "group counts to load and measure, ascending (each size adds groups to the previous load)")
	keys := fs.Int("keys-per-group", 5, "offset keys (topic partitions) per group")
	rounds := fs.Int("rounds", 4, "commits per key (messages per group)")
	topics := fs.Int("topics", 100, "topics the keys spread over")
	runs := fs.Int("runs", 3, "runs of every command per size (median reported)")
	members := fs.Int("member-groups", 0, "with KoP: also run this many real consumer groups with members (kop-lab load --via kafka)")
	keep := fs.Bool("keep", false, "leave the lab running afterwards (default: kop-lab down)")
	via := fs.String("via", "pulsar", "how kop-lab load writes: pulsar (KoP's format straight into the topic) or kafka (OffsetCommit to KoP; needs KoP)")
	both := fs.Bool("both", true, "also measure check on both clusters beside the plain reader of both (off for a quick big size)")
	cached := fs.Bool("cached", true, "with KoP: also measure the cached side (check beside kafka-consumer-groups, about 6 ms per group); off for a big size, which keeps KoP's own load")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := lab.FindRoot()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rc := runConfig{root: root, kopLab: filepath.Join(root, "bin", "kop-lab"), kopOffsets: filepath.Join(root, "bin", "kop-offsets"),
		self: self, config: lab.Paths{Root: root}.ConfigYAML(), keys: *keys, rounds: *rounds, topics: *topics, runs: *runs,
		memberGroups: *members, keep: *keep, both: *both, cached: *cached, via: *via, out: os.Stdout, log: os.Stderr}
	prev := 0
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= prev {
			return fmt.Errorf("--sizes %q: want ascending group counts", *sizes)
		}
		rc.sizes = append(rc.sizes, n)
		prev = n
	}
	for _, b := range []string{rc.kopLab, rc.kopOffsets} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s missing: run make build first", b)
		}
	}
	return rc.run(ctx)
}

func (rc runConfig) step(format string, a ...any) {
	fmt.Fprintf(rc.log, "bench: "+format+"\n", a...)
}

func (rc runConfig) sh(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = rc.log, rc.log
	return cmd.Run()
}

func (rc runConfig) run(ctx context.Context) (err error) {
	start := time.Now()
	// With KOP_NAR set, kop-lab up loads that NAR (docs/lab.md); the environment passes through.
	rc.step("starting the lab over fresh data (%s up --fresh)", rc.kopLab)
	if err := rc.sh(ctx, rc.kopLab, "up", "--fresh"); err != nil {
		return fmt.Errorf("kop-lab up: %w", err)
	}
	if !rc.keep {
		defer func() {
			rc.step("stopping the lab")
			if derr := rc.sh(context.Background(), rc.kopLab, "down"); derr != nil && err == nil {
				err = derr
			}
		}()
	}
	clusters := lab.DefaultClusters()
	src, dst := clusters[0], clusters[1]
	kop := true
	for _, c := range clusters {
		if lab.KafkaMetadata(ctx, c) != nil {
			kop = false
		}
	}
	var kafkaCP string
	if kop && rc.cached {
		if kafkaCP, err = rc.kafkaClasspath(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(rc.out, "# make bench-lab, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(rc.out, "Machine: %s, %d CPUs, %s; load average at start %s. KoP in the lab: %v.\n",
		runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), memTotal(), loadAvg(), onOff(kop))
	fmt.Fprintf(rc.out, "Load: kop-lab load --via %s on %s (one OffsetCommit request, so one message, per group and round), %d keys per group over %d topics, %d commits per key; "+
		"geo-replicated to %s before measuring. Each figure: median of %d runs, ours and the reference alternating; "+
		"wall (min-max), user+system CPU, peak RSS (getrusage).\n", rc.via, src.Name, rc.keys, rc.topics, rc.rounds, dst.Name, rc.runs)

	var results []sizeResult
	prev := 0
	for _, g := range rc.sizes {
		if err := rc.loadSize(ctx, src, dst, kop, prev, g); err != nil {
			return err
		}
		prev = g
		live := g * rc.keys
		pairs := rc.pairs(src, dst, kop, kafkaCP, live)
		if err := rc.measure(ctx, pairs, kop, src); err != nil {
			return err
		}
		results = append(results, sizeResult{groups: g, keys: live, pairs: pairs})
		rc.table(g, live, g*rc.rounds, pairs)
	}
	if len(results) >= 2 {
		rc.growth(results[0], results[len(results)-1])
	}
	fmt.Fprintf(rc.out, "\nWhole bench: %s.\n", time.Since(start).Round(time.Second))
	return nil
}

// loadSize loads groups prev..g-1 on src (and, with KoP, the member groups once), waits
// for dst to hold the copies, and with --cached makes both KoPs load them.
func (rc runConfig) loadSize(ctx context.Context, src, dst lab.Cluster, kop bool, prev, g int) error {
	add := g - prev
	loadArgs := []string{rc.kopLab, "load", "--via", rc.via, "--cluster", src.Name, "--groups", fmt.Sprint(add), "--first-group", fmt.Sprint(prev),
		"--keys-per-group", fmt.Sprint(rc.keys), "--topics", fmt.Sprint(rc.topics), "--commits", fmt.Sprint(add * rc.keys * rc.rounds),
		"--create-topics=" + fmt.Sprint(prev == 0)}
	rc.step("loading groups %d..%d: %s", prev, g-1, strings.Join(loadArgs[1:], " "))
	if err := rc.sh(ctx, loadArgs...); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if kop && rc.memberGroups > 0 && prev == 0 {
		if err := rc.sh(ctx, rc.kopLab, "load", "--via", "kafka", "--cluster", src.Name, "--groups", "1", "--commits", "1",
			"--create-topics=false", "--member-groups", fmt.Sprint(rc.memberGroups), "--keys-per-group", fmt.Sprint(rc.keys),
			"--topics", fmt.Sprint(rc.topics), "--first-group", "9000000"); err != nil {
			return fmt.Errorf("member groups: %w", err)
		}
	}
	if err := waitReplicated(ctx, src, dst, rc.log); err != nil {
		return err
	}
	if kop && rc.cached {
		// KoP's caches hold none of the commits written straight to the topic: make both
		// clusters' KoP load them before anything asks KoP (its own load is measured below).
		for _, c := range []lab.Cluster{src, dst} {
			s, err := kopLoad(ctx, c, lab.Paths{Root: rc.root}.LogFile(c.Name), kopWait(g*rc.keys))
			if err != nil {
				return fmt.Errorf("KoP warm-up load: %w", err)
			}
			rc.step("KoP on %s loaded the offsets partitions in %.2f s (longest partition %.2f s by KoP's log, %d attempts) %s", c.Name, s.Wall.Seconds(), s.KoPMax.Seconds(), s.Attempts, s.Partial)
		}
	}
	return nil
}

func (rc runConfig) pairs(src, dst lab.Cluster, kop bool, kafkaCP string, live int) []*pair {
	ko := func(args ...string) Cmd {
		return Cmd{Name: "kop-offsets", Args: append([]string{rc.kopOffsets, "--config", rc.config}, args...), OK: []int{1}}
	}
	drainOne := Cmd{Name: "drain", Args: []string{rc.self, "drain", "--service-url", src.ServiceURL}}
	drainBoth := Cmd{Name: "drain", Args: []string{rc.self, "drain", "--service-url", src.ServiceURL + "," + dst.ServiceURL}}
	one := "--cluster=" + src.Name
	ps := []*pair{
		{work: "replay: `check --persisted-only " + one + " -o json`", refName: "plain reader, same partitions", ours: ko("check", "--persisted-only", one, "-o", "json"), ref: drainOne},
		{work: "replay: `dump --compacted " + one + " -o json`", refName: "plain reader, same partitions", ours: ko("dump", "--compacted", one, "-o", "json"), ref: drainOne},
	}
	if rc.both {
		ps = append(ps, &pair{work: "replay: `check --persisted-only -o json` (both clusters)", refName: "plain reader, both clusters", ours: ko("check", "--persisted-only", "-o", "json"), ref: drainBoth})
	}
	if kop {
		kcg := Cmd{Name: "kafka-consumer-groups", Args: []string{"java", "-cp", kafkaCP, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
			"--bootstrap-server", src.KafkaBootstrap, "--describe", "--all-groups"}}
		if rc.cached {
			ps = append(ps,
				&pair{work: "`check " + one + " -o json` (cached + persisted)", refName: "kafka-consumer-groups --describe --all-groups (" + src.Name + ")", ours: ko("check", one, "-o", "json"), ref: kcg, kop: true},
				&pair{work: "`check -o json`, both clusters", refName: "kafka-consumer-groups --describe --all-groups (" + src.Name + " only)", ours: ko("check", "-o", "json"), ref: kcg, kop: true},
			)
		}
		ps = append(ps, &pair{work: "replay of all offsets partitions: `check --persisted-only " + one + "`", refName: "KoP's own load of the same partitions (" + src.Name + ", bundle unload)", ours: ko("check", "--persisted-only", one, "-o", "json"), kop: true})
	}
	for _, p := range ps {
		p.liveKeys = live
	}
	return ps
}

// measure runs every pair rc.runs times, ours first in even runs and the reference first in
// odd ones, and keeps the medians. A failing command marks its cell, it does not stop the bench.
func (rc runConfig) measure(ctx context.Context, ps []*pair, kop bool, src lab.Cluster) error {
	ours := make([][]Sample, len(ps))
	refs := make([][]Sample, len(ps))
	for run := range rc.runs {
		for i, p := range ps {
			steps := []bool{true, false} // true: ours
			if run%2 == 1 {
				steps = []bool{false, true}
			}
			for _, isOurs := range steps {
				if err := ctx.Err(); err != nil {
					return err
				}
				var (
					s   Sample
					err error
					c   = p.ours
				)
				switch {
				case isOurs:
					s, err = measure(c)
				case p.isKoPLoad():
					c = Cmd{Name: "kop-load"}
					s, err = kopLoad(ctx, src, lab.Paths{Root: rc.root}.LogFile(src.Name), kopWait(p.liveKeys))
				default:
					c = p.ref
					s, err = measure(c)
				}
				rc.step("size run %d/%d %-22s %-6s %6.2fs %6.2fs CPU %s %v", run+1, rc.runs, c.Name, map[bool]string{true: "ours", false: "ref"}[isOurs],
					s.Wall.Seconds(), s.CPU.Seconds(), mib(s.RSS), errOrEmpty(err))
				if isOurs {
					if err != nil {
						p.ourErr = err
					} else {
						ours[i] = append(ours[i], s)
					}
				} else {
					if err != nil {
						p.refErr = err
					} else {
						refs[i] = append(refs[i], s)
					}
				}
			}
		}
	}
	for i, p := range ps {
		p.ourStat, p.refStat = median(ours[i]), median(refs[i])
	}
	_ = kop
	return nil
}

// cpuRatio renders ours/ref CPU as "2.5x" or "12x less".
func cpuRatio(ours, ref time.Duration) string {
	r := float64(ours) / float64(ref)
	if r >= 1 {
		return fmt.Sprintf("%.1fx", r)
	}
	return fmt.Sprintf("%.1fx less", 1/r)
}

// isKoPLoad reports the pair whose reference is KoP's own load (kopLoad).
func (p *pair) isKoPLoad() bool { return p.kop && p.ref.Args == nil }

// refWall is the reference's time: for KoP's own load, KoP's longest partition load by its
// log (partitions load concurrently), else the measured wall time.
func (p *pair) refWall(st Stat) time.Duration {
	if p.isKoPLoad() {
		return st.KoPMax
	}
	return st.Wall
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return "FAILED: " + strings.SplitN(err.Error(), "\n", 2)[0]
}

func (rc runConfig) table(groups, keys, msgs int, ps []*pair) {
	fmt.Fprintf(rc.out, "\n### %d groups, %d live offset keys, %d messages per cluster\n\n", groups, keys, msgs)
	fmt.Fprintln(rc.out, "| work | kop-offsets | reference | ratio (wall, ours/reference) |")
	fmt.Fprintln(rc.out, "|---|---|---|---|")
	cell := func(st Stat, err error) string {
		if err != nil {
			return "failed: " + strings.SplitN(err.Error(), "\n", 2)[0]
		}
		return st.String()
	}
	for _, p := range ps {
		r := "-"
		if p.ourErr == nil && p.refErr == nil {
			r = ratio(p.ourStat.Wall, p.refWall(p.refStat))
			if p.refStat.CPU > 0 && !p.isKoPLoad() {
				r += "; CPU " + cpuRatio(p.ourStat.CPU, p.refStat.CPU)
			}
		}
		ref := p.refName + ": " + cell(p.refStat, p.refErr)
		if p.isKoPLoad() && p.refErr == nil {
			ref = fmt.Sprintf("%s: %.2f s for the longest partition by KoP's log (%.2f s summed over partitions); %.2f s (%.2f-%.2f) from the unload to the last partition seen loaded; at most %d attempts",
				p.refName, p.refStat.KoPMax.Seconds(), p.refStat.KoPSum.Seconds(), p.refStat.Wall.Seconds(), p.refStat.MinWall.Seconds(), p.refStat.MaxWall.Seconds(), p.refStat.Attempts)
			if p.refStat.Partial != "" {
				ref += "; partial: " + p.refStat.Partial
			}
		}
		fmt.Fprintf(rc.out, "| %s | %s | %s | %s |\n", p.work, cell(p.ourStat, p.ourErr), ref, r)
	}
	// Memory per live key, from the same runs.
	for _, p := range ps[:2] {
		if p.ourErr != nil {
			continue
		}
		perKey := float64(p.ourStat.RSS) / float64(keys)
		fmt.Fprintf(rc.out, "| peak RSS per live key: %s | %.0f B (%s / %d keys) | goal: 250 B | %.1fx the goal |\n",
			strings.TrimPrefix(p.work, "replay: "), perKey, mib(p.ourStat.RSS), keys, perKey/250)
	}
}

// waitReplicated waits until src has no replication backlog toward dst on the offsets topic.
func waitReplicated(ctx context.Context, src, dst lab.Cluster, log io.Writer) error {
	a, err := lab.NewAdmin(src)
	if err != nil {
		return err
	}
	tn, err := utils.GetTopicName(lab.OffsetsTopic)
	if err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(10 * time.Minute)
	for {
		st, err := a.Topics().GetPartitionedStatsWithContext(ctx, *tn, false)
		if err == nil {
			r, ok := st.Replication[dst.Name]
			if ok && r.Connected && r.ReplicationBacklog == 0 {
				fmt.Fprintf(log, "bench: %s -> %s replication backlog 0 after %s\n", src.Name, dst.Name, time.Since(start).Round(100*time.Millisecond))
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replication %s -> %s of %s not done after 10m (last error: %w)", src.Name, dst.Name, lab.OffsetsTopic, err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// kafkaClasspath resolves Apache Kafka's tools (tools/benchlab/kafka-tools/pom.xml) with
// Maven and returns their classpath.
func (rc runConfig) kafkaClasspath(ctx context.Context) (string, error) {
	out := filepath.Join(lab.Paths{Root: rc.root}.RunDir(), "kafka-tools.classpath")
	pom := filepath.Join(rc.root, "tools", "benchlab", "kafka-tools", "pom.xml")
	rc.step("resolving Apache Kafka's tools with Maven (%s)", pom)
	if err := rc.sh(ctx, "mvn", "-B", "-ntp", "-q", "-f", pom, "dependency:build-classpath", "-Dmdep.outputFile="+out); err != nil {
		return "", fmt.Errorf("mvn dependency:build-classpath -f %s: %w", pom, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", err
	}
	cp := strings.TrimSpace(string(b))
	if cp == "" {
		return "", errors.New("empty Kafka tools classpath")
	}
	return cp, nil
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return fmt.Sprintf("%.0f GiB RAM", kb/(1<<20))
		}
	}
	return "memory unknown"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off (KoP rows skipped)"
}

// growth prints the growth table from size a to size b.
func (rc runConfig) growth(a, b sizeResult) {
	fmt.Fprintf(rc.out, "\n### Growth from %d to %d groups (%d to %d live keys, %.1fx)\n\n", a.groups, b.groups, a.keys, b.keys, float64(b.keys)/float64(a.keys))
	fmt.Fprintln(rc.out, "| work | wall growth | CPU growth | RSS added per added key |")
	fmt.Fprintln(rc.out, "|---|---|---|---|")
	for i := range a.pairs {
		pa, pb := a.pairs[i], b.pairs[i]
		if pa.ourErr != nil || pb.ourErr != nil {
			continue
		}
		perKey := float64(pb.ourStat.RSS-pa.ourStat.RSS) / float64(b.keys-a.keys)
		fmt.Fprintf(rc.out, "| %s | %.1fx | %.1fx | %.0f B |\n", pa.work, float64(pb.ourStat.Wall)/float64(pa.ourStat.Wall),
			float64(pb.ourStat.CPU)/float64(pa.ourStat.CPU), perKey)
		ra, rb := pa.refWall(pa.refStat), pb.refWall(pb.refStat)
		if pa.refErr == nil && pb.refErr == nil && ra > 0 {
			cpu := "-"
			if pa.refStat.CPU > 0 {
				cpu = fmt.Sprintf("%.1fx", float64(pb.refStat.CPU)/float64(pa.refStat.CPU))
			}
			fmt.Fprintf(rc.out, "| (reference: %s) | %.1fx | %s | |\n", pa.refName, float64(rb)/float64(ra), cpu)
		}
	}
}
