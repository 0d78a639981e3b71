{{- define "suite.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: suite
{{- end -}}

{{/* As service.fullname: a release name's dots become dashes. */}}
{{- define "suite.fullname" -}}
{{- $release := .Release.Name | replace "." "-" -}}
{{- if contains .Chart.Name $release -}}
{{- $release | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" $release .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The routed services: a list of {name, backend, port, routes} for each enabled service with routes.
The backend is named by the service chart's own template, given the alias as its chart name.
*/}}
{{- define "suite.routedServices" -}}
{{- $out := list -}}
{{- range $name, $routes := .Values.routes -}}
{{- $svc := index $.Values $name | default dict -}}
{{- if and $routes $svc.enabled -}}
{{- $backend := include "service.fullname" (dict "Chart" (dict "Name" $name) "Values" $svc "Release" $.Release) -}}
{{- $out = append $out (dict "name" $name "backend" $backend "port" $svc.service.port "routes" $routes) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
A route as an ingress-nginx regex (it puts `^` in front itself): PathPrefix matches whole segments.
*/}}
{{- define "suite.ingressPath" -}}
{{- if eq .match "Exact" -}}
{{- printf "%s$" .path -}}
{{- else if eq .match "PathPrefix" -}}
{{- printf "%s(/|$)" (trimSuffix "/" .path) -}}
{{- else -}}
{{- printf "%s$" .path -}}
{{- end -}}
{{- end -}}

{{/*
Both bundled and external, or neither, is a mistake: say so before anything is installed.
*/}}
{{- define "suite.validate" -}}
{{- $extDb := dig "externalDatabase" "host" "" (.Values.global | merge dict) -}}
{{- $extRedis := dig "externalRedis" "host" "" (.Values.global | merge dict) -}}
{{- $kind := .Values.global.database | default "" -}}
{{- if eq $kind "cloudnative-pg" -}}
{{- if .Values.postgresql.enabled -}}
{{- fail "global.database=cloudnative-pg: turn the bundled PostgreSQL off (postgresql.enabled=false)" -}}
{{- end -}}
{{- else if eq $kind "external" -}}
{{- if not $extDb -}}
{{- fail "global.database=external: set global.externalDatabase.host" -}}
{{- end -}}
{{- if .Values.postgresql.enabled -}}
{{- fail "global.database=external: turn the bundled PostgreSQL off (postgresql.enabled=false)" -}}
{{- end -}}
{{- else if and (eq $kind "bundled") (not .Values.postgresql.enabled) -}}
{{- fail "global.database=bundled: postgresql.enabled=true, or choose cloudnative-pg or external" -}}
{{- else -}}
{{- if and .Values.postgresql.enabled $extDb -}}
{{- fail "global.externalDatabase.host is set: turn the bundled PostgreSQL off (postgresql.enabled=false)" -}}
{{- end -}}
{{- if not (or .Values.postgresql.enabled $extDb) -}}
{{- fail "no database: set global.externalDatabase.host, global.database=cloudnative-pg, or postgresql.enabled=true" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.redis.enabled $extRedis -}}
{{- fail "global.externalRedis.host is set: turn the bundled Redis off (redis.enabled=false)" -}}
{{- end -}}
{{- if not (or .Values.redis.enabled $extRedis) -}}
{{- fail "no Redis: set global.externalRedis.host, or redis.enabled=true" -}}
{{- end -}}
{{- if and (contains "." .Release.Name) (or .Values.postgresql.enabled .Values.redis.enabled) -}}
{{- fail (printf "release name %q: the bundled Bitnami charts name their Services after the release, and a Service name cannot hold a dot; use a name without dots, or an external database and Redis" .Release.Name) -}}
{{- end -}}
{{- end -}}

{{- define "suite.requireApi" -}}
{{- if not (.context.Capabilities.APIVersions.Has .api) -}}
{{- fail (printf "%s needs the %s API, which this cluster does not serve: %s" .what .api .hint) -}}
{{- end -}}
{{- end -}}

{{/* "true" when the HTTPRoute gets Traefik's retry middleware: retries on, the route made, Traefik's API there. */}}
{{- define "suite.traefikRetry" -}}
{{- if and .Values.retries.enabled .Values.gateway.enabled (.Capabilities.APIVersions.Has "traefik.io/v1alpha1/Middleware") -}}true{{- end -}}
{{- end -}}
