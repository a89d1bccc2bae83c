{{/* Names and labels, as `helm create` lays them out. */}}
{{- define "kop-offsets.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kop-offsets.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kop-offsets.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kop-offsets.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kop-offsets.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kop-offsets.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: watch
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kop-offsets.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kop-offsets.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The config's volume source: the chart's Secret, or the Secret or ConfigMap named. */}}
{{- define "kop-offsets.configVolume" -}}
{{- $c := .Values.config }}
{{- $n := add (ternary 1 0 (not (empty $c.inline))) (ternary 1 0 (not (empty $c.existingSecret))) (ternary 1 0 (not (empty $c.existingConfigMap))) }}
{{- if ne (int $n) 1 }}
{{- fail "set exactly one of config.inline, config.existingSecret, config.existingConfigMap (the kop-offsets config file, docs/config.md)" }}
{{- end }}
{{- if $c.existingConfigMap }}
configMap:
  name: {{ $c.existingConfigMap }}
  items: [{key: {{ $c.key | quote }}, path: config.yaml}]
{{- else }}
secret:
  secretName: {{ $c.existingSecret | default (printf "%s-config" (include "kop-offsets.fullname" .)) }}
  items: [{key: {{ $c.key | quote }}, path: config.yaml}]
{{- end }}
{{- end }}

{{/* watch's command line. */}}
{{- define "kop-offsets.args" -}}
{{- $w := .Values.watch }}
- --config
- /etc/kop-offsets/config.yaml
- watch
- --listen
- {{ printf "0.0.0.0:%v" $w.port | quote }}
- --interval
- {{ $w.interval | quote }}
{{- with $w.resync }}
- --resync
- {{ . | quote }}
{{- end }}
{{- with $w.rowSeries }}
- --row-series
- {{ . | quote }}
{{- end }}
{{- range $w.clusters }}
- --cluster
- {{ . | quote }}
{{- end }}
{{- range $w.groups }}
- --group
- {{ . | quote }}
{{- end }}
{{- range $w.topics }}
- --topic
- {{ . | quote }}
{{- end }}
{{- if $w.sync }}
- --sync
{{- end }}
{{- if $w.repair }}
- --repair
- --max-bundles
- {{ $w.maxBundles | quote }}
- --cooldown
- {{ $w.cooldown | quote }}
{{- if $w.dryRun }}
- --dry-run
{{- end }}
{{- with $.Values.audit.topic }}
- --audit-topic
- {{ . | quote }}
{{- end }}
{{- else if $w.dryRun }}
{{- fail "watch.dryRun applies to watch.repair only" }}
{{- else if $.Values.audit.topic }}
{{- fail "audit.topic applies to watch.repair only" }}
{{- end }}
{{- if $w.verbose }}
- --verbose
{{- end }}
{{- range $w.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}
