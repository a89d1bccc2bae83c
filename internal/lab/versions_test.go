package lab

import (
	"strings"
	"testing"
)

func TestLineOf(t *testing.T) {
	for _, tc := range []struct {
		v                  string
		line               string
		zk, startAt, multi bool
	}{
		{"2.10.1", "2.10", true, false, false},
		{"2.11.0", "2.11", false, false, true},
		{"3.0.7", "3.0", false, false, true},
		{"3.0.16", "3.0", false, true, true},
		{"3.3.6", "3.3", false, true, true},
		{"4.0.1", "4.0", false, false, true},
		{"4.0.8", "4.0", false, true, true},
		{"4.1.0-SNAPSHOT", "4.1", false, true, true},
	} {
		l, err := LineOf(tc.v)
		if err != nil {
			t.Errorf("%s: %v", tc.v, err)
			continue
		}
		if l.String() != tc.line || l.StandaloneZooKeeper != tc.zk || l.ReplicationStartAt != tc.startAt || l.MultiBroker != tc.multi {
			t.Errorf("%s: line %+v (%s), want %s zk=%v startAt=%v multi=%v", tc.v, l, l, tc.line, tc.zk, tc.startAt, tc.multi)
		}
	}
	for _, bad := range []string{"", "4.0", "2.9.3", "x.y.z", "4.0.x"} {
		if _, err := LineOf(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := LineOf("2.9.3"); err == nil || !strings.Contains(err.Error(), "2.10 and later") {
		t.Errorf("2.9.3: %v, want the supported lines named", err)
	}
}

// TestJavaArgsPerLine: 2.10's standalone gets an embedded ZooKeeper on the cluster's
// ZooKeeper port instead of --metadata-dir, which its JCommander refuses; 3.0 and 4.0 keep
// the RocksDB store.
func TestJavaArgsPerLine(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "200")
	p := Paths{Root: "/repo"}
	for _, tc := range []struct {
		version   string
		want, not []string
	}{
		{"2.10.1",
			[]string{"-cp /repo/lab/run/dist/apache-pulsar-2.10.1/lib/*",
				"-nfw -nss --zookeeper-port 22381 --zookeeper-dir /repo/lab/run/wus/data/zookeeper --bookkeeper-dir",
				"--bookkeeper-port 23381"},
			[]string{"--metadata-dir"}},
		{"3.0.16",
			[]string{"-cp /repo/lab/run/dist/apache-pulsar-3.0.16/lib/*", "-nfw -nss --metadata-dir /repo/lab/run/wus/data/metadata --bookkeeper-dir"},
			[]string{"--zookeeper-port", "--zookeeper-dir"}},
		{"4.0.8",
			[]string{"--metadata-dir /repo/lab/run/wus/data/metadata"},
			[]string{"--zookeeper"}},
	} {
		line, err := LineOf(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		wus := withLinePorts(DefaultClusters(), line)[1] // 2.10: ZooKeeper on 22181+200
		joined := strings.Join(JavaArgs(p, wus, tc.version), " ")
		for _, w := range tc.want {
			if !strings.Contains(joined, w) {
				t.Errorf("%s: java args lack %q:\n%s", tc.version, w, joined)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(joined, n) {
				t.Errorf("%s: java args have %q:\n%s", tc.version, n, joined)
			}
		}
	}
}

// TestWithLinePorts: only standalones of a ZooKeeper line get a ZooKeeper port, the one of
// their cluster's base moved by the offset, and it is among the ports checked before a start.
func TestWithLinePorts(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "200")
	l210, _ := LineOf("2.10.1")
	l40, _ := LineOf("4.0.8")
	cs := withLinePorts(DefaultClusters(), l210)
	if cs[0].Ports.ZooKeeper != 12381 || cs[1].Ports.ZooKeeper != 22381 {
		t.Errorf("2.10 ZooKeeper ports %d %d, want 12381 22381", cs[0].Ports.ZooKeeper, cs[1].Ports.ZooKeeper)
	}
	found := false
	for _, port := range cs[0].AllPorts() {
		found = found || port == 12381
	}
	if !found {
		t.Errorf("scus AllPorts %v lack its ZooKeeper port", cs[0].AllPorts())
	}
	for _, c := range withLinePorts(DefaultClusters(), l40) {
		if c.Ports.ZooKeeper != 0 {
			t.Errorf("4.0 standalone %s has ZooKeeper port %d", c.Name, c.Ports.ZooKeeper)
		}
	}
}

func TestResolveRefusesMultiBrokerOn210(t *testing.T) {
	t.Setenv("PULSAR_VERSION", "2.10.1")
	_, err := Options{Root: "/repo", Shape: Shape{Clusters: 2, Brokers: 2}}.resolve()
	if err == nil || !strings.Contains(err.Error(), "2.11 and later") {
		t.Fatalf("resolve: %v, want the multi-broker lab refused on 2.10", err)
	}
	t.Setenv("PULSAR_VERSION", "2.9.3")
	if _, err := (Options{Root: "/repo"}).resolve(); err == nil {
		t.Fatal("resolve accepted Pulsar 2.9.3")
	}
}

// TestRenderBrokerConfPerLine: every line gets topic policies on (2.10 has them off by
// default, and the sync deployment needs them) and a standalone's metadata store left to
// the starter's flags (2.10 then points zookeeperServers at its embedded ZooKeeper); broker
// deduplication is off and the transaction coordinator on, with KoP, on 2.10 only.
func TestRenderBrokerConfPerLine(t *testing.T) {
	t.Setenv("KOP_LAB_PORT_OFFSET", "")
	p := repoPaths(t)
	tmpl := readTemplate(t, p.ConfTemplate())
	for _, v := range ProvenLines {
		scus := DefaultClusters()[0]
		scus.KoP = true
		out, err := RenderBrokerConf(tmpl, p, scus, v, KoPStatus{Version: "x"})
		if err != nil {
			t.Fatal(err)
		}
		m := parseConf(t, out)
		dedup, txn, check := "true", "false", ""
		if v == "2.10.1" {
			dedup, txn, check = "false", "true", "10"
		}
		for k, want := range map[string]string{"systemTopicEnabled": "true", "topicLevelPoliciesEnabled": "true",
			"metadataStoreUrl": "", "configurationMetadataStoreUrl": "", "messagingProtocols": "kafka",
			"brokerDeduplicationEnabled": dedup, "transactionCoordinatorEnabled": txn} {
			if got, ok := m[k]; !ok || got != want {
				t.Errorf("%s: %s=%q (set %v), want %q", v, k, got, ok, want)
			}
		}
		if got := m["replicationPolicyCheckDurationSeconds"]; got != check {
			t.Errorf("%s: replicationPolicyCheckDurationSeconds=%q, want %q (Pulsar's default where empty)", v, got, check)
		}
	}
}
