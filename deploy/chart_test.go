//go:build deploy

package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kop-offsets/kop-offsets/internal/commands/factory"
	"github.com/kop-offsets/kop-offsets/internal/commands/root"
	"github.com/kop-offsets/kop-offsets/internal/config"
	"github.com/kop-offsets/kop-offsets/internal/iostreams"
)

const chartDir = "helm/kop-offsets"

// helmBin is $HELM, else the pinned helm of bin/tools (scripts/tools.sh helm).
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join("..", "bin", "tools", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no helm at %s ($HELM): make chart-check installs it (%v)", bin, err)
	}
	return bin
}

// object is one Kubernetes object of the rendered chart, as generic YAML.
type object map[string]any

// get walks keys (map keys, or "name=X" to pick the list element whose name is X).
func (o object) get(keys ...string) any {
	var cur any = map[string]any(o)
	for _, k := range keys {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[k]
		case []any:
			name, ok := strings.CutPrefix(k, "name=")
			if !ok {
				return nil
			}
			cur = nil
			for _, e := range v {
				if m, ok := e.(map[string]any); ok && m["name"] == name {
					cur = m
				}
			}
		default:
			return nil
		}
	}
	return cur
}

// render runs helm template with the values files (relative to the chart) and returns the
// objects by kind.
func render(t *testing.T, values ...string) map[string]object {
	t.Helper()
	args := []string{"template", "kop", chartDir, "--namespace", "monitoring"}
	for _, v := range values {
		args = append(args, "--values", filepath.Join(chartDir, v))
	}
	out, err := exec.Command(helmBin(t), args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	objs := map[string]object{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if o == nil {
			continue
		}
		kind, _ := o["kind"].(string)
		if _, dup := objs[kind]; dup {
			t.Fatalf("two objects of kind %s", kind)
		}
		objs[kind] = object(o)
	}
	return objs
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// assertPod checks what every rendering of the chart must hold: one replica, Recreate
// (watch.sync: two, rolled one at a time: the leases keep one writer), the probes on
// watch's endpoints, the security context, the config mounted read-only.
func assertPod(t *testing.T, objs map[string]object) object {
	t.Helper()
	d, ok := objs["Deployment"]
	if !ok {
		t.Fatal("no Deployment")
	}
	sync := slices.Contains(strs(d.get("spec", "template", "spec", "containers", "name=watch", "args")), "--sync")
	switch r, s := d.get("spec", "replicas"), d.get("spec", "strategy", "type"); {
	case sync && (r != 2 || s != "RollingUpdate"):
		t.Errorf("watch --sync: replicas = %v, strategy %v, want 2, RollingUpdate (one syncs, one waits)", r, s)
	case !sync && r != 1:
		t.Errorf("replicas = %v, want 1 (one writer per cluster)", r)
	case !sync && s != "Recreate":
		t.Errorf("strategy = %v, want Recreate (never two pods at once)", s)
	}
	pod := object(d.get("spec", "template", "spec").(map[string]any))
	for k, want := range map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532} {
		if got := pod.get("securityContext", k); got != want {
			t.Errorf("pod securityContext.%s = %v, want %v", k, got, want)
		}
	}
	if pod.get("automountServiceAccountToken") != false {
		t.Error("the service account token is mounted; kop-offsets never calls the Kubernetes API")
	}
	c := object(pod.get("containers", "name=watch").(map[string]any))
	if c == nil {
		t.Fatal("no container watch")
	}
	if c.get("securityContext", "readOnlyRootFilesystem") != true || c.get("securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext = %v", c.get("securityContext"))
	}
	if drop := strs(c.get("securityContext", "capabilities", "drop")); !slices.Equal(drop, []string{"ALL"}) {
		t.Errorf("capabilities dropped = %v, want [ALL]", drop)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if got := c.get(probe, "httpGet", "path"); got != path {
			t.Errorf("%s path = %v, want %s", probe, got, path)
		}
		if got := c.get(probe, "httpGet", "port"); got != "http" {
			t.Errorf("%s port = %v, want http", probe, got)
		}
	}
	if got := c.get("ports", "name=http", "containerPort"); got != 9464 {
		t.Errorf("port http = %v, want 9464", got)
	}
	if c.get("resources", "limits", "memory") == nil || c.get("resources", "requests", "cpu") == nil {
		t.Errorf("resources = %v", c.get("resources"))
	}
	if m := c.get("volumeMounts", "name=config"); m == nil || object(m.(map[string]any)).get("mountPath") != "/etc/kop-offsets/config.yaml" ||
		object(m.(map[string]any)).get("readOnly") != true {
		t.Errorf("config mount = %v, want /etc/kop-offsets/config.yaml read-only", m)
	}
	if c.get("volumeMounts", "name=tmp", "mountPath") != "/tmp" || pod.get("volumes", "name=tmp", "emptyDir") == nil {
		t.Error("no emptyDir on /tmp (the root filesystem is read-only)")
	}
	return pod
}

// assertWatchArgs parses the container's arguments with kop-offsets' own command tree:
// they must name the watch command and flags it has, with valid values.
func assertWatchArgs(t *testing.T, pod object, wantRepair bool) {
	t.Helper()
	args := strs(pod.get("containers", "name=watch", "args"))
	ios, _, _, _ := iostreams.Test()
	cmd := root.NewCmdRoot(factory.New("test", ios))
	sub, rest, err := cmd.Find(args)
	if err != nil || sub.Name() != "watch" {
		t.Fatalf("args %q: command %v, %v; want watch", args, sub.Name(), err)
	}
	if err := sub.ParseFlags(rest); err != nil {
		t.Fatalf("args %q: %v", args, err)
	}
	if pos := sub.Flags().Args(); len(pos) > 0 {
		t.Errorf("args %q: stray arguments %q", args, pos)
	}
	if got, _ := sub.Flags().GetString("config"); got != "/etc/kop-offsets/config.yaml" {
		t.Errorf("--config = %q", got)
	}
	if got, _ := sub.Flags().GetString("listen"); got != "0.0.0.0:9464" {
		t.Errorf("--listen = %q, want 0.0.0.0:9464 (reachable by the probes)", got)
	}
	if got, _ := sub.Flags().GetBool("repair"); got != wantRepair {
		t.Errorf("--repair = %v, want %v", got, wantRepair)
	}
	assertAuditTrail(t, pod, wantRepair)
}

// assertAuditTrail checks where watch --repair writes its audit trail: the root filesystem
// is read-only, so $KOP_OFFSETS_AUDIT_FILE must lie on the audit volume's mount. Without
// repair nothing is written, and neither is there.
func assertAuditTrail(t *testing.T, pod object, repair bool) {
	t.Helper()
	c := object(pod.get("containers", "name=watch").(map[string]any))
	file, _ := c.get("env", "name=KOP_OFFSETS_AUDIT_FILE", "value").(string)
	mount, _ := c.get("volumeMounts", "name=audit", "mountPath").(string)
	if !repair {
		if file != "" || mount != "" || pod.get("volumes", "name=audit") != nil {
			t.Errorf("audit trail without repair: env %q, mount %q", file, mount)
		}
		return
	}
	if mount == "" || !strings.HasPrefix(file, mount+"/") {
		t.Errorf("KOP_OFFSETS_AUDIT_FILE %q not on the audit volume (mounted at %q)", file, mount)
	}
	if c.get("volumeMounts", "name=audit", "readOnly") == true {
		t.Error("the audit volume is mounted read-only")
	}
	if pod.get("volumes", "name=audit", "emptyDir") == nil && pod.get("volumes", "name=audit", "persistentVolumeClaim") == nil {
		t.Errorf("audit volume %v: want an emptyDir or a PVC", pod.get("volumes", "name=audit"))
	}
}

func TestChartDefaults(t *testing.T) {
	objs := render(t, "ci/existing-values.yaml")
	pod := assertPod(t, objs)
	assertWatchArgs(t, pod, false) // repair is off unless asked for
	if got := pod.get("volumes", "name=config", "configMap", "name"); got != "kop-offsets-config" {
		t.Errorf("config volume from ConfigMap %v, want kop-offsets-config", got)
	}
	for _, kind := range []string{"Secret", "ServiceMonitor"} {
		if _, ok := objs[kind]; ok {
			t.Errorf("a %s by default", kind)
		}
	}
	if objs["Service"].get("spec", "ports", "name=http", "port") != 9464 {
		t.Errorf("service ports = %v", objs["Service"].get("spec", "ports"))
	}
}

func TestChartInlineConfigCredentialsRepair(t *testing.T) {
	objs := render(t, "ci/inline-values.yaml")
	pod := assertPod(t, objs)
	assertWatchArgs(t, pod, true)

	// The inline config is a Secret, and a valid kop-offsets config.
	sec, ok := objs["Secret"]
	if !ok {
		t.Fatal("no Secret for the inline config")
	}
	if got := pod.get("volumes", "name=config", "secret", "secretName"); got != sec.get("metadata", "name") {
		t.Errorf("config volume from Secret %v, want %v", got, sec.get("metadata", "name"))
	}
	text, _ := sec.get("stringData", "config.yaml").(string)
	cfg, err := config.Parse([]byte(text), "config.yaml")
	if err != nil {
		t.Fatalf("the rendered config is not a valid kop-offsets config: %v\n%s", err, text)
	}
	if len(cfg.Clusters) != 2 {
		t.Errorf("clusters = %d, want 2", len(cfg.Clusters))
	}

	// Credentials: a Secret mounted read-only as a directory (rotated tokens reach tokenFile).
	c := object(pod.get("containers", "name=watch").(map[string]any))
	if got := pod.get("volumes", "name=credentials", "secret", "secretName"); got != "kop-offsets-credentials" {
		t.Errorf("credentials volume from %v", got)
	}
	m, _ := c.get("volumeMounts", "name=credentials").(map[string]any)
	if m == nil || m["mountPath"] != "/etc/kop-offsets/credentials" || m["readOnly"] != true || m["subPath"] != nil {
		t.Errorf("credentials mount = %v", m)
	}
	if got := c.get("envFrom"); len(got.([]any)) != 1 {
		t.Errorf("envFrom = %v", got)
	}

	// The audit trail: an emptyDir by default, and the copy to the topic asked for.
	if pod.get("volumes", "name=audit", "emptyDir") == nil {
		t.Errorf("audit volume %v, want an emptyDir by default", pod.get("volumes", "name=audit"))
	}
	args := strs(c.get("args"))
	if i := slices.Index(args, "--audit-topic"); i < 0 || i+1 >= len(args) || args[i+1] != "persistent://{tenant}/kop-offsets/audit" {
		t.Errorf("args %q: want --audit-topic persistent://{tenant}/kop-offsets/audit", args)
	}

	// The ServiceMonitor scrapes the Service's port.
	sm, ok := objs["ServiceMonitor"]
	if !ok {
		t.Fatal("no ServiceMonitor with serviceMonitor.enabled")
	}
	eps, _ := sm.get("spec", "endpoints").([]any)
	if len(eps) != 1 || object(eps[0].(map[string]any)).get("port") != "http" || object(eps[0].(map[string]any)).get("path") != "/metrics" {
		t.Errorf("ServiceMonitor endpoints = %v", eps)
	}
	if sm.get("metadata", "labels", "release") != "prometheus" {
		t.Errorf("ServiceMonitor labels = %v", sm.get("metadata", "labels"))
	}
}

func TestChartAuditOnAClaim(t *testing.T) {
	pod := assertPod(t, render(t, "ci/audit-pvc-values.yaml"))
	assertWatchArgs(t, pod, true)
	if got := pod.get("volumes", "name=audit", "persistentVolumeClaim", "claimName"); got != "kop-offsets-audit" {
		t.Errorf("audit volume from claim %v, want kop-offsets-audit", got)
	}
	if slices.Contains(strs(pod.get("containers", "name=watch", "args")), "--audit-topic") {
		t.Error("--audit-topic without audit.topic")
	}
}

func TestChartLint(t *testing.T) {
	for _, v := range []string{"ci/existing-values.yaml", "ci/inline-values.yaml", "ci/audit-pvc-values.yaml"} {
		out, err := exec.Command(helmBin(t), "lint", "--strict", chartDir, "--values", filepath.Join(chartDir, v)).CombinedOutput()
		if err != nil {
			t.Errorf("helm lint --strict with %s: %v\n%s", v, err, out)
		}
	}
	// No config is an error that says what to set, not a pod that cannot start.
	out, err := exec.Command(helmBin(t), "template", "kop", chartDir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "set exactly one of config.inline") {
		t.Errorf("helm template without a config: %v\n%s", err, out)
	}
	out, err = exec.Command(helmBin(t), "template", "kop", chartDir, "--values", filepath.Join(chartDir, "ci/existing-values.yaml"),
		"--set", "audit.topic=persistent://t/ns/audit").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "audit.topic applies to watch.repair only") {
		t.Errorf("helm template with audit.topic and no repair: %v\n%s", err, out)
	}
}

// TestChartSync: watch --sync runs as two replicas (one syncs under the writer leases, the
// other takes over), rolled one at a time; repair is off.
func TestChartSync(t *testing.T) {
	objs := render(t, "ci/sync-values.yaml")
	pod := assertPod(t, objs)
	assertWatchArgs(t, pod, false)
	args := strs(pod.get("containers", "name=watch", "args"))
	if !slices.Contains(args, "--sync") {
		t.Errorf("args %q: no --sync", args)
	}
	d := objs["Deployment"]
	if r := d.get("spec", "replicas"); r != 2 {
		t.Errorf("replicas %v, want 2", r)
	}
	if s := d.get("spec", "strategy", "rollingUpdate", "maxSurge"); s != 0 {
		t.Errorf("maxSurge %v, want 0", s)
	}
	out, err := exec.Command(helmBin(t), "template", "kop", chartDir, "--values", filepath.Join(chartDir, "ci/sync-values.yaml"),
		"--set", "watch.repair=true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "watch.sync and watch.repair exclude each other") {
		t.Errorf("helm template with sync and repair: %v\n%s", err, out)
	}
}
