{{/*
Names. With the umbrella's aliases `.Chart.Name` is the alias, so the name is the service's name.
*/}}
{{- define "service.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Full name: `<release>-<name>`, or the release name alone when it already contains the name.
The umbrella calls this too (with a small context of Chart.Name, Values, Release) to name backends.
A release name may hold dots (`suite.v2`), a Service name may not: they become dashes.
*/}}
{{- define "service.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- $release := .Release.Name | replace "." "-" -}}
{{- if contains $name $release -}}
{{- $release | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" $release $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "service.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels. The selector is name + instance + component, so the Job and test pods of a service (other
components) are never endpoints of its Service nor counted by its HPA, PDB or NetworkPolicy.
*/}}
{{- define "service.selectorLabels" -}}
app.kubernetes.io/name: {{ include "service.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "service.serverSelectorLabels" -}}
{{ include "service.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "service.labels" -}}
helm.sh/chart: {{ include "service.chart" . }}
{{ include "service.selectorLabels" . }}
app.kubernetes.io/version: {{ include "service.tag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: suite
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "service.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "service.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
Image: [registry/]repository[:tag][@digest]; repository defaults to suite-<name>. The registry is
global.imageRegistry when set (Bitnami's meaning: a mirror of every image, theirs included), else
image.registry, else global.suite.imageRegistry (the suite's images only).
*/}}
{{/*
The image tag as written, or appVersion. A tag of digits only (a short commit hash: skaffold's
`--set image.tag=8092485`) arrives as a number: an int64 from --set, a float64 from a values file.
*/}}
{{- define "service.tag" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if kindIs "float64" $tag -}}
{{- $tag = ternary (int64 $tag | toString) (toString $tag) (eq $tag (int64 $tag | float64)) -}}
{{- end -}}
{{- toString $tag -}}
{{- end -}}

{{- define "service.image" -}}
{{- $suite := dig "suite" "imageRegistry" "" (.Values.global | merge dict) -}}
{{- $registry := .Values.global.imageRegistry | default .Values.image.registry | default $suite -}}
{{- $repository := default (printf "suite-%s" (include "service.name" .)) .Values.image.repository -}}
{{- $ref := ternary (printf "%s/%s" $registry $repository) $repository (ne $registry "") -}}
{{- $ref = printf "%s:%s" $ref (include "service.tag" .) -}}
{{- if .Values.image.digest -}}
{{- $ref = printf "%s@%s" $ref .Values.image.digest -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{/*
The environment every container of the service gets (server, migrate, seed). Passwords only ever
come from a Secret (secretKeyRef); the URLs carry no password.
*/}}
{{- define "service.env" -}}
{{- $db := include "service.database" . | fromJson -}}
{{- $redis := include "service.redis" . | fromJson -}}
- name: DATABASE_URL
  value: {{ printf "postgres://%s@%s:%v/%s%s" $db.user $db.host $db.port $db.database (ternary (printf "?%s" $db.options) "" (ne $db.options "")) | quote }}
{{- if $db.secret }}
- name: DATABASE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $db.secret }}
      key: {{ $db.key }}
{{- end }}
- name: REDIS_URL
  value: {{ printf "%s://%s:%v" (ternary "rediss" "redis" $redis.tls) $redis.host $redis.port | quote }}
{{- if $redis.secret }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $redis.secret }}
      key: {{ $redis.key }}
{{- end }}
- name: PORT
  value: {{ .Values.containerPort | quote }}
- name: WORKERS
  value: {{ include "service.workers" . | quote }}
{{- /* In the dev loop a synced file restarts the process inside its pod, which stays the endpoint
it was: no load balancer to wait for, no client that stops sending, and a save should answer in
seconds. */}}
- name: SHUTDOWN_DELAY_MS
  value: {{ ternary 0 (mul .Values.shutdown.delaySeconds 1000) .Values.devLoop.enabled | quote }}
- name: SHUTDOWN_GRACE_MS
  value: {{ ternary 1000 (mul .Values.shutdown.graceSeconds 1000) .Values.devLoop.enabled | quote }}
{{- if .Values.devLoop.enabled }}
- name: SHUTDOWN_IDLE_MS
  value: "0"
{{- end }}
{{- with .Values.global.tracing }}
{{- if .endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .sampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .ratio | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ include "service.name" $ | quote }}
# Resource attributes that lead from a trace to its pod (the downward API fills them in).
- name: K8S_POD_NAME
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
- name: K8S_NAMESPACE_NAME
  valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
- name: K8S_NODE_NAME
  valueFrom: { fieldRef: { fieldPath: spec.nodeName } }
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.pod.name=$(K8S_POD_NAME),k8s.namespace.name=$(K8S_NAMESPACE_NAME),k8s.node.name=$(K8S_NODE_NAME),k8s.deployment.name=%s" (include "service.fullname" $) | quote }}
{{- end }}
{{- end }}
{{- range $name, $value := .Values.config }}
- name: {{ $name }}
  value: {{ include "service.string" $value | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by the Deployment, the Jobs and the test pods. */}}
{{- define "service.podCommon" -}}
automountServiceAccountToken: false
enableServiceLinks: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The seconds Kubernetes waits after SIGTERM: the service's own delay and grace, plus a margin. */}}
{{- define "service.terminationGracePeriodSeconds" -}}
{{- add .Values.shutdown.delaySeconds .Values.shutdown.graceSeconds 5 -}}
{{- end -}}

{{/*
Egress to the cluster DNS (networkPolicy.dns). A NetworkPolicy's port is the DNS pod's own, which is not
always the Service's 53 (the lab's CoreDNS listens on 1053).
*/}}
{{- define "service.dnsEgressRule" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .namespace }}
      podSelector:
        matchLabels:
          {{- toYaml .podLabels | nindent 10 }}
  ports:
    {{- range .ports }}
    - port: {{ . }}
      protocol: UDP
    - port: {{ . }}
      protocol: TCP
    {{- end }}
{{- end -}}

{{/*
Egress to PostgreSQL or Redis: the bundled chart's pods (Bitnami labels), a CloudNativePG Cluster's
instances (any of them may be the primary) or, for an external server, the given peers (all
addresses when none are given), on the server's port only.
*/}}
{{- define "service.egressRule" -}}
- ports:
    - port: {{ .target.port }}
      protocol: TCP
  {{- if .target.cloudnativePg }}
  to:
    - podSelector:
        matchLabels:
          cnpg.io/cluster: {{ .target.cloudnativePg }}
  {{- else if not .target.external }}
  to:
    - podSelector:
        matchLabels:
          app.kubernetes.io/name: {{ .chart }}
          app.kubernetes.io/instance: {{ .context.Release.Name }}
  {{- else if .peers }}
  to:
    {{- toYaml .peers | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* The migrate container: an init container of every pod, and the hook Job's container. */}}
{{- define "service.migrateContainer" -}}
- name: migrate
  image: {{ include "service.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args: [migrate, --wait, {{ .Values.migrations.waitSeconds | quote }}]
  env:
    {{- include "service.env" . | nindent 4 }}
  {{- with include "service.databaseCaMount" . }}
  volumeMounts:
    {{- . | nindent 4 }}
  {{- end }}
  resources:
    {{- toYaml .Values.migrations.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
{{- end -}}

{{/* Where pods may run: the same for the Deployment and the Jobs. */}}
{{- define "service.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $tolerations := .Values.tolerations }}
{{- $seconds := .Values.nodeLoss.tolerationSeconds }}
{{- if and .server (not (kindIs "invalid" $seconds)) }}
{{- /* A server pod on a node that stopped answering is evicted after this long, and replaced. */}}
{{- range list "node.kubernetes.io/not-ready" "node.kubernetes.io/unreachable" }}
{{- $tolerations = append $tolerations (dict "key" . "operator" "Exists" "effect" "NoExecute" "tolerationSeconds" (int $seconds)) }}
{{- end }}
{{- end }}
{{- with $tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
A value as the string of an environment variable or an argument. Numbers from YAML reach templates
as float64, which toString writes in exponent form from a million on (1000011 → "1.000011e+06"):
whole numbers go through int64 first.
*/}}
{{- define "service.string" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}{{ int64 . }}{{- else -}}{{ toString . }}{{- end -}}
{{- end -}}

{{/*
The seed Job's pod template. Arguments: context, args (the generator's size and seed), common
(--wait, --if-empty: what load and seed share). direct: one `seed` container straight into
PostgreSQL; else `generate` into an emptyDir, then `load` from it.
*/}}
{{- define "service.seedPod" -}}
{{- $ := .context -}}
{{- $s := $.Values.seed -}}
metadata:
  labels:
    {{- include "service.labels" $ | nindent 4 }}
    app.kubernetes.io/component: seed
spec:
  restartPolicy: Never
  {{- include "service.podCommon" $ | nindent 2 }}
  {{- if $s.direct }}
  containers:
    # seed migrates first, generates straight into PostgreSQL, swaps the table in atomically
    # and clears the cached answers: no files, so no scratch volume whatever the scale.
    - name: seed
      image: {{ include "service.image" $ }}
      imagePullPolicy: {{ $.Values.image.pullPolicy }}
      args: {{ concat (list "seed") .args (list "--streams" (include "service.string" $s.streams)) .common | toJson }}
      env:
        {{- include "service.env" $ | nindent 8 }}
      {{- with include "service.databaseCaMount" $ }}
      volumeMounts:
        {{- . | nindent 8 }}
      {{- end }}
      resources:
        {{- toYaml $s.resources | nindent 8 }}
      securityContext:
        {{- toYaml $.Values.securityContext | nindent 8 }}
  {{- else }}
  initContainers:
    - name: generate
      image: {{ include "service.image" $ }}
      imagePullPolicy: {{ $.Values.image.pullPolicy }}
      args: {{ concat (list "generate" "--out" "/data") .args | toJson }}
      resources:
        {{- toYaml $s.resources | nindent 8 }}
      securityContext:
        {{- toYaml $.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /data
  containers:
    # load migrates first, swaps the tables in atomically and clears the cached answers.
    - name: load
      image: {{ include "service.image" $ }}
      imagePullPolicy: {{ $.Values.image.pullPolicy }}
      args: {{ concat (list "load" "--dir" "/data") .common | toJson }}
      env:
        {{- include "service.env" $ | nindent 8 }}
      resources:
        {{- toYaml $s.resources | nindent 8 }}
      securityContext:
        {{- toYaml $.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: data
          mountPath: /data
        {{- with include "service.databaseCaMount" $ }}
        {{- . | nindent 8 }}
        {{- end }}
  volumes:
    - name: data
      emptyDir:
        sizeLimit: {{ $s.dataSizeLimit }}
  {{- end }}
  {{- if and $s.direct (include "service.databaseCaVolume" $) }}
  volumes:
  {{- end }}
  {{- with include "service.databaseCaVolume" $ }}
    {{- . | nindent 4 }}
  {{- end }}
  {{- include "service.scheduling" $ | nindent 2 }}
{{- end -}}

{{/*
WORKERS: `workers`, or (0) the CPUs the container may use: its CPU limit, else its CPU request,
rounded down, at least 1 ("100m" → 1, "1500m" → 1, "2" → 2). A thread more than that only shares the
same CPU time, with a heap, a pool and compiled schemas of its own.
*/}}
{{- define "service.workers" -}}
{{- if .Values.workers -}}
{{- .Values.workers -}}
{{- else -}}
{{- $cpu := toString (dig "limits" "cpu" (dig "requests" "cpu" "1" .Values.resources) .Values.resources) -}}
{{- $milli := 0 -}}
{{- if hasSuffix "m" $cpu -}}
{{- $milli = trimSuffix "m" $cpu | atoi -}}
{{- else -}}
{{- $milli = mulf (float64 $cpu) 1000 | int -}}
{{- end -}}
{{- max 1 (div $milli 1000) -}}
{{- end -}}
{{- end -}}
