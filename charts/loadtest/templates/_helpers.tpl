{{/* The release name as names use it: its dots become dashes (a Service name cannot hold one). */}}
{{- define "loadtest.release" -}}
{{- .Release.Name | replace "." "-" -}}
{{- end -}}

{{- define "loadtest.fullname" -}}
{{- printf "%s-loadtest" (include "loadtest.release" .) | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "loadtest.labels" -}}
app.kubernetes.io/name: loadtest
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: suite
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The URL of a service: targets.<service>, or the umbrella's Service for it, named as the service
chart names it (`<release>-<service>`, or the release name alone when it contains the service's).
*/}}
{{- define "loadtest.target" -}}
{{- $url := index .root.Values.targets .service -}}
{{- if $url -}}
{{- $url -}}
{{- else if contains .service (include "loadtest.release" .root) -}}
{{- printf "http://%s" (include "loadtest.release" .root) -}}
{{- else -}}
{{- printf "http://%s-%s" (include "loadtest.release" .root) .service -}}
{{- end -}}
{{- end -}}

{{/*
The TestRun of a run. Arguments: root, name (also the run's testid), component (the mode),
env (the plan's settings, scenarios.js's names: SCENARIOS, PLAN, <SERVICE>_BASE_URL…).
The initializer gets the same env: it evaluates the script's options (`k6 inspect`) to check the
run's VUs against `parallelism`, and without them it would see other options than the runners.
*/}}
{{- define "loadtest.testRun" -}}
{{- $v := .root.Values -}}
{{- $env := merge (dict) .env (dict
  "P95_MS" (toString $v.slo.p95Ms) "P99_MS" (toString $v.slo.p99Ms) "ERROR_RATE" (toString $v.slo.errorRate)
  "K6_PROMETHEUS_RW_SERVER_URL" $v.prometheus.remoteWriteUrl
  "K6_PROMETHEUS_RW_PUSH_INTERVAL" $v.prometheus.pushInterval
  "K6_PROMETHEUS_RW_TREND_STATS" $v.prometheus.trendStats) -}}
{{- $envList := list -}}
{{- range $k, $val := $env }}{{ $envList = append $envList (dict "name" $k "value" ($val | toString)) }}{{ end -}}
{{- $tmp := dict "volumes" (list (dict "name" "tmp" "emptyDir" (dict "sizeLimit" "64Mi"))) "volumeMounts" (list (dict "name" "tmp" "mountPath" "/tmp")) -}}
apiVersion: k6.io/v1alpha1
kind: TestRun
metadata:
  name: {{ .name }}
  labels:
    {{- include "loadtest.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    suite/run: {{ $v.run | quote }}
spec:
  parallelism: {{ $v.parallelism }}
  {{- with $v.cleanup }}
  cleanup: {{ . }}
  {{- end }}
  script:
    configMap:
      name: {{ include "loadtest.fullname" .root }}-scripts
      file: suite.js
  arguments: --no-usage-report -o experimental-prometheus-rw --tag testid={{ .name }}
  initializer:
    image: {{ $v.image }}
    imagePullPolicy: {{ $v.imagePullPolicy }}
    env:
      {{- toYaml $envList | nindent 6 }}
    resources:
      {{- toYaml $v.initializerResources | nindent 6 }}
    securityContext:
      {{- toYaml $v.podSecurityContext | nindent 6 }}
    containerSecurityContext:
      {{- toYaml $v.securityContext | nindent 6 }}
    {{- toYaml $tmp | nindent 4 }}
  starter:
    {{- with $v.starterImage }}
    image: {{ . }}
    imagePullPolicy: {{ $v.imagePullPolicy }}
    {{- end }}
    resources:
      {{- toYaml $v.initializerResources | nindent 6 }}
    securityContext:
      {{- toYaml $v.podSecurityContext | nindent 6 }}
    containerSecurityContext:
      {{- toYaml $v.securityContext | nindent 6 }}
  runner:
    image: {{ $v.image }}
    imagePullPolicy: {{ $v.imagePullPolicy }}
    metadata:
      labels:
        {{- include "loadtest.labels" .root | nindent 8 }}
        app.kubernetes.io/component: {{ .component }}
        {{- with $v.labels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    env:
      {{- toYaml $envList | nindent 6 }}
      {{- with $v.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    resources:
      {{- toYaml $v.resources | nindent 6 }}
    securityContext:
      {{- toYaml $v.podSecurityContext | nindent 6 }}
    containerSecurityContext:
      {{- toYaml $v.securityContext | nindent 6 }}
    {{- toYaml $tmp | nindent 4 }}
    {{- with $v.nodeSelector }}
    nodeSelector:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $v.tolerations }}
    tolerations:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $v.affinity }}
    affinity:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end -}}
